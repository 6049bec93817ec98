//go:build linux

package main

import (
	"bufio"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crongate/crongate/tests/etcd/cluster"
)

// rpcCounts is what the members' /metrics count: gRPC calls started by
// method (summed over the members) and the writes committed (the largest
// count of any member: each member counts every write it applies).
type rpcCounts struct {
	calls  map[string]float64
	writes float64
}

// readRPCs reads every member's /metrics. A member that does not answer
// counts nothing.
func readRPCs(cl *cluster.Cluster) rpcCounts {
	r := rpcCounts{calls: map[string]float64{}}
	hc := http.Client{Timeout: 5 * time.Second}
	for _, ep := range cl.Endpoints() {
		resp, err := hc.Get(ep + "/metrics")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var writes float64
		for sc.Scan() {
			line := sc.Text()
			name, rest, ok := strings.Cut(line, " ")
			if !ok {
				continue
			}
			v, err := strconv.ParseFloat(rest, 64)
			if err != nil {
				continue
			}
			switch {
			case name == "etcd_server_proposals_committed_total":
				writes = v
			case strings.HasPrefix(name, "grpc_server_started_total{"):
				if _, m, ok := strings.Cut(name, `grpc_method="`); ok {
					m, _, _ = strings.Cut(m, `"`)
					r.calls[m] += v
				}
			}
		}
		resp.Body.Close()
		r.writes = max(r.writes, writes)
	}
	return r
}

// perCycle formats the calls and writes counted in r per cycle: the
// requests a cycle is made of.
func perCycle(r rpcCounts, cycles float64) string {
	if cycles == 0 {
		return ""
	}
	var ms []string
	for m, v := range r.calls {
		if d := v / cycles; d >= 0.05 {
			ms = append(ms, fmt.Sprintf("%s %.2f", m, d))
		}
	}
	slices.Sort(ms)
	return fmt.Sprintf("writes %.2f; calls: %s", r.writes/cycles, strings.Join(ms, ", "))
}

// addRPCs adds the counts between a and b to sum.
func addRPCs(sum, a, b rpcCounts) rpcCounts {
	if sum.calls == nil {
		sum.calls = map[string]float64{}
	}
	for m, v := range b.calls {
		sum.calls[m] += v - a.calls[m]
	}
	sum.writes += b.writes - a.writes
	return sum
}
