# Build, install and uninstall withlock and cron-gate (docs/install.md).
#
#   make                                  # build/bin: the binaries; build/doc: man pages, completions
#   sudo make install                     # into PREFIX=/usr/local: binaries, man pages, completions
#   sudo make install PREFIX=/usr DESTDIR=/tmp/stage
#   sudo make uninstall                   # removes exactly the files install put (same PREFIX)
#   make GOARCH=arm64 BUILD=build/arm64   # cross-build (GOARCH=arm GOARM=7 for armhf)
#
# The binaries are static (CGO_ENABLED=0), built with -trimpath, and carry
# the version (internal/runner/VERSION) and the commit: from git in a
# checkout, else from the COMMIT file that `git archive` fills in, so a
# source tarball without git builds the same --version. The man pages and
# completions are generated from the code (make doc: internal/clidoc's TestWriteFiles).

PREFIX      ?= /usr/local
DESTDIR     ?=
BINDIR      ?= $(PREFIX)/bin
MANDIR      ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
# zsh looks in /usr/share/zsh/vendor-completions for packages and in
# /usr/local/share/zsh/site-functions for the rest (Debian's fpath).
ZSHCOMPDIR  ?= $(if $(filter /usr,$(PREFIX)),$(PREFIX)/share/zsh/vendor-completions,$(PREFIX)/share/zsh/site-functions)
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
BUILD       ?= build
# sudo's PATH lacks /usr/local/go/bin, where Go's own tarball installs.
GO          ?= $(or $(shell command -v go 2>/dev/null),$(wildcard /usr/local/go/bin/go),go)

MODULE  := github.com/crongate/crongate
VERSION ?= $(shell cat internal/runner/VERSION)
# git only when this directory is the checkout itself, never a tree that
# merely contains an unpacked tarball.
ifneq ($(wildcard .git),)
COMMIT  ?= $(shell git rev-parse HEAD)$(shell git diff --quiet HEAD -- 2>/dev/null || echo -dirty)
DATE    ?= $(shell git log -1 --format=%cs)
else
COMMIT  ?= $(shell sed -n 's/^\([0-9a-f]\{40\}\) .*/\1/p' COMMIT 2>/dev/null)
DATE    ?= $(shell sed -n 's/^[0-9a-f]\{40\} \([0-9-]\{10\}\)$$/\1/p' COMMIT 2>/dev/null)
endif
ifeq ($(DATE),)
DATE    := $(shell date -u -d @$${SOURCE_DATE_EPOCH:-$$(date +%s)} +%F)
endif
# No build tags: the etcd binaries no longer link gRPC (internal/etcdv3),
# whose tracing the tag grpcnotrace used to leave out.
TAGS    :=
LDFLAGS := -s -w -X $(MODULE)/internal/runner.Version=$(VERSION) -X $(MODULE)/internal/runner.Commit=$(COMMIT)

BINS      := withlock withlock-etcd cron-gate cron-gate-etcd
MAN1      := withlock.1 cron-gate.1
# The companions' pages are links to their program's.
MAN1LINKS := withlock-etcd.1:withlock.1 cron-gate-etcd.1:cron-gate.1
MAN5      := cron-gate.toml.5
PROGS     := withlock cron-gate

# Every file install puts, and so every file uninstall removes.
INSTALLED := $(BINS:%=$(BINDIR)/%) \
	$(MAN1:%=$(MANDIR)/man1/%) $(foreach l,$(MAN1LINKS),$(MANDIR)/man1/$(word 1,$(subst :, ,$(l)))) \
	$(MAN5:%=$(MANDIR)/man5/%) \
	$(PROGS:%=$(BASHCOMPDIR)/%) $(PROGS:%=$(ZSHCOMPDIR)/_%) $(PROGS:%=$(FISHCOMPDIR)/%.fish)

.PHONY: all bin doc install uninstall clean installed-files

all: bin doc

bin:
	CGO_ENABLED=0 $(GO) build -trimpath -tags '$(TAGS)' -ldflags '$(LDFLAGS)' -o $(BUILD)/bin/ ./cmd/...

# The generator runs on the build machine, whatever GOARCH the binaries are for.
doc:
	rm -rf $(BUILD)/doc
	GOOS= GOARCH= GOARM= CGO_ENABLED=0 $(GO) test ./internal/clidoc -run '^TestWriteFiles$$' -count=1 \
		-args -write $(abspath $(BUILD))/doc -version $(VERSION) -date $(DATE)

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 \
		$(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)
	install -m 0755 $(BINS:%=$(BUILD)/bin/%) $(DESTDIR)$(BINDIR)/
	install -m 0644 $(MAN1:%=$(BUILD)/doc/man/man1/%) $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 $(MAN5:%=$(BUILD)/doc/man/man5/%) $(DESTDIR)$(MANDIR)/man5/
	$(foreach l,$(MAN1LINKS),ln -sfn $(word 2,$(subst :, ,$(l))) $(DESTDIR)$(MANDIR)/man1/$(word 1,$(subst :, ,$(l))) &&) true
	install -m 0644 $(PROGS:%=$(BUILD)/doc/completions/bash/%) $(DESTDIR)$(BASHCOMPDIR)/
	install -m 0644 $(PROGS:%=$(BUILD)/doc/completions/zsh/_%) $(DESTDIR)$(ZSHCOMPDIR)/
	install -m 0644 $(PROGS:%=$(BUILD)/doc/completions/fish/%.fish) $(DESTDIR)$(FISHCOMPDIR)/

# Directories are left: they may have been there before install.
uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))

installed-files:
	@printf '%s\n' $(INSTALLED)

clean:
	rm -rf $(BUILD)
