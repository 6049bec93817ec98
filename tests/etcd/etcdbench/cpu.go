//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/tests/etcd/cluster"
)

// cpuMeter reads the CPU time spent since a mark by three parties: the
// processes this benchmark started and waited for (the contenders: their
// rusage), the etcd members (their /proc/PID/stat), and the whole machine
// (/proc/stat, all CPUs, not idle). On a machine whose CPUs are all busy
// throughput is the machine's CPU divided by the CPU per cycle, which is
// why the contended case prints it.
type cpuMeter struct {
	cl *cluster.Cluster
}

type cpuMark struct {
	children, etcd, machine time.Duration
	at                      time.Time
}

func (m cpuMeter) mark() cpuMark {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	k := cpuMark{children: tv(ru.Utime) + tv(ru.Stime), at: time.Now()}
	for i := range m.cl.Members {
		if pid := m.cl.Pid(i); pid > 0 {
			k.etcd += procCPU(pid)
		}
	}
	k.machine = machineCPU()
	return k
}

func tv(t syscall.Timeval) time.Duration {
	return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
}

// clockTick is USER_HZ, the unit of /proc's CPU times.
const clockTick = time.Second / runner.ClockTicks

func procCPU(pid int) time.Duration {
	st, err := runner.ReadProcStat(pid)
	if err != nil {
		return 0
	}
	return time.Duration(st.CPUTicks) * clockTick
}

// machineCPU is the busy time of all CPUs (user, nice, system, irq,
// softirq, steal).
func machineCPU() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var busy int64
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest times are in user already
			continue
		}
		busy += n
	}
	return time.Duration(busy) * clockTick
}

// cpuUse is what a case cost per cycle (ops cycles since a mark), and
// how busy it kept the machine.
type cpuUse struct {
	ops                     float64
	children, etcd, machine time.Duration
	wall                    time.Duration
}

func (u *cpuUse) add(a, b cpuMark, ops int64) {
	u.ops += float64(ops)
	u.children += b.children - a.children
	u.etcd += b.etcd - a.etcd
	u.machine += b.machine - a.machine
	u.wall += b.at.Sub(a.at)
}

func (u cpuUse) per(d time.Duration) float64 { return float64(d) / 1e6 / u.ops }

// busy is the machine's busy CPU time over its capacity (NumCPU × wall).
func (u cpuUse) busy(ncpu int) float64 {
	return float64(u.machine) / (float64(u.wall) * float64(ncpu))
}

// rpcCost prints the etcd members' CPU per request of each kind a lock
// cycle is made of, n of each, sent in turn from one client connected to
// every member (so they spread over leader and followers as a process
// per call's do): what the cluster's share of a cycle is made of, and
// the least any lease-based lock can cost it (grant, put, revoke).
func rpcCost(cl *cluster.Cluster, n int) {
	eps := cl.Endpoints()
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps})
	check(err)
	defer cli.Close()
	ctx := context.Background()
	mnt := clientv3.NewMaintenanceFromMaintenanceClient(pb.NewMaintenanceClient(cli.ActiveConnection()), cli)
	kinds := []struct {
		name string
		f    func(i int)
	}{
		{"lease grant + put under it + revoke (the least lock cycle)", func(i int) {
			l, err := cli.Grant(ctx, 10)
			check(err)
			_, err = cli.Put(ctx, fmt.Sprintf("/rpccost/lock/%d", i), "x", clientv3.WithLease(l.ID))
			check(err)
			_, err = cli.Revoke(ctx, l.ID)
			check(err)
		}},
		{"lease grant", func(i int) {
			_, err := cli.Grant(ctx, 1)
			check(err)
		}},
		{"put", func(i int) {
			_, err := cli.Put(ctx, "/rpccost/put", "x")
			check(err)
		}},
		{"linearizable get", func(i int) {
			_, err := cli.Get(ctx, "/rpccost/put")
			check(err)
		}},
		{"serializable get", func(i int) {
			_, err := cli.Get(ctx, "/rpccost/put", clientv3.WithSerializable())
			check(err)
		}},
		{"status, on the client's connection (as withlock asks)", func(i int) {
			_, err := mnt.Status(ctx, "")
			check(err)
		}},
		{"watch: create, then cancel", func(i int) {
			wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
			cli.Watch(wctx, "/rpccost/put", clientv3.WithCreatedNotify())
			cancel()
		}},
		{"a new connection and one status (as every process opens)", func(i int) {
			c, err := clientv3.New(clientv3.Config{Endpoints: []string{eps[i%len(eps)]}})
			check(err)
			_, err = c.Status(ctx, eps[i%len(eps)])
			check(err)
			c.Close()
		}},
	}
	meter := cpuMeter{cl}
	uses := make([]cpuUse, len(kinds))
	const batch = 20
	for done := 0; done < n; done += batch {
		for k, kind := range kinds {
			a := meter.mark()
			for i := done; i < done+batch; i++ {
				kind.f(i)
			}
			uses[k].add(a, meter.mark(), batch)
		}
	}
	fmt.Printf("| request (%d of each, from one client, in turns of %d) | etcd CPU per request (3 members) |\n|---|---:|\n", n, batch)
	for k, kind := range kinds {
		fmt.Printf("| %s | %.2f ms |\n", kind.name, uses[k].per(uses[k].etcd))
	}
}
