// A franz-go (github.com/twmb/franz-go/pkg/kgo) group member for kafka-coop's test bed: the Java member's
// command line, RebalanceEvent lines, offsets committed on revoke, a clean close on SIGTERM.
//
// kgo decides eager or cooperative per join from the assignor the group selected (consumer_group.go:
// "for _, balancer := range g.cfg.balancers { if protocol == balancer.ProtocolName() ... IsCooperative"),
// so a mixed list follows the selected one; the member learns which one by wrapping each balancer's
// ParseSyncAssignment, which kgo calls on the selected balancer only.
package main

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kafka-coop/interop/member"
)

type tracked struct {
	kgo.GroupBalancer
	selected *atomic.Value
}

func (t tracked) ParseSyncAssignment(b []byte) (map[string][]int32, error) {
	if t.IsCooperative() {
		t.selected.Store("cooperative")
	} else {
		t.selected.Store("eager")
	}
	return t.GroupBalancer.ParseSyncAssignment(b)
}

func balancer(name string) kgo.GroupBalancer {
	switch name {
	case "range":
		return kgo.RangeBalancer()
	case "roundrobin":
		return kgo.RoundRobinBalancer()
	case "sticky":
		return kgo.StickyBalancer()
	case "cooperative-sticky":
		return kgo.CooperativeStickyBalancer()
	}
	member.Fail("franz-go has no assignor " + name + " (it ships range, roundrobin, sticky, cooperative-sticky)")
	return nil
}

func tps(m map[string][]int32) []member.TP {
	var out []member.TP
	for topic, parts := range m {
		for _, p := range parts {
			out = append(out, member.TP{Topic: topic, Partition: p})
		}
	}
	return out
}

func main() {
	o := member.Parse()
	stop := member.Terminated() // first: the library may join before the poll loop starts
	if o.Close == "remain" && o.InstanceID == "" {
		member.Fail("franz-go always leaves on close for a dynamic member; --close remain needs --instance-id")
	}
	log := member.Open(o)
	clientID := o.ClientID
	if clientID == "" {
		clientID = "kgo"
	}
	var selected atomic.Value
	selected.Store("eager")
	protocol := func() string {
		if o.GroupProtocol == "consumer" {
			return "consumer"
		}
		return selected.Load().(string)
	}
	var cl *kgo.Client
	memberID := func() string { id, _ := cl.GroupMetadata(); return id }
	commit := func(ctx context.Context, parts []member.TP) (map[member.TP]int64, string) {
		offsets := log.Processed(parts)
		if len(offsets) == 0 {
			return nil, ""
		}
		req := map[string]map[int32]kgo.EpochOffset{}
		for tp, off := range offsets {
			if req[tp.Topic] == nil {
				req[tp.Topic] = map[int32]kgo.EpochOffset{}
			}
			req[tp.Topic][tp.Partition] = kgo.EpochOffset{Epoch: -1, Offset: off}
		}
		var failure string
		cl.CommitOffsetsSync(ctx, req, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				failure = err.Error()
				return
			}
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if p.ErrorCode != 0 && failure == "" {
						failure = "commit error code " + strconv.Itoa(int(p.ErrorCode))
					}
				}
			}
		})
		if failure != "" {
			return map[member.TP]int64{}, failure
		}
		return offsets, ""
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(strings.Split(o.Bootstrap, ",")...),
		kgo.ConsumerGroup(o.Group),
		kgo.ConsumeTopics(o.Topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			log.Emit(member.Event{Kind: "assigned", MemberID: memberID(), ClientID: clientID, Protocol: protocol(), Parts: tps(m), Started: time.Now()})
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, _ *kgo.Client, m map[string][]int32) {
			t0 := time.Now()
			parts := tps(m)
			committed, failure := commit(ctx, parts)
			log.Emit(member.Event{Kind: "revoked", MemberID: memberID(), ClientID: clientID, Protocol: protocol(), Parts: parts, Committed: committed, Error: failure, Started: t0})
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			log.Emit(member.Event{Kind: "lost", MemberID: memberID(), ClientID: clientID, Protocol: protocol(), Parts: tps(m), Started: time.Now()})
		}),
	}
	if o.ClientID != "" {
		opts = append(opts, kgo.ClientID(o.ClientID))
	}
	if o.InstanceID != "" {
		opts = append(opts, kgo.InstanceID(o.InstanceID))
	}
	if o.GroupProtocol == "consumer" {
		// kgo derives the server assignor from its first balancer: sticky -> "uniform", range -> "range".
		switch o.RemoteAssignor {
		case "", "uniform":
			opts = append(opts, kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.ServerSideBalancer())
		case "range":
			opts = append(opts, kgo.Balancers(kgo.RangeBalancer()), kgo.ServerSideBalancer())
		default:
			member.Fail("franz-go picks the KIP-848 server assignor from its balancer: uniform or range, not " + o.RemoteAssignor)
		}
	} else {
		var bs []kgo.GroupBalancer
		for _, name := range o.Assignors {
			bs = append(bs, tracked{balancer(name), &selected})
		}
		opts = append(opts, kgo.Balancers(bs...))
	}
	for k := range o.Props {
		member.Fail("franz-go takes options in code, not properties; --prop " + k + " is not supported")
	}
	var err error
	cl, err = kgo.NewClient(opts...)
	if err != nil {
		member.Fail("franz-go refused the configuration: " + err.Error())
	}
	member.Ready()
	lastCommit := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-stop; cancel() }()
	for ctx.Err() == nil {
		fetches := cl.PollRecords(ctx, 500)
		fetches.EachRecord(func(r *kgo.Record) {
			log.Record(clientID, member.TP{Topic: r.Topic, Partition: r.Partition}, r.Offset, r.Timestamp.UnixMilli())
		})
		log.Flush()
		if time.Since(lastCommit) >= time.Second {
			commit(context.Background(), nil)
			lastCommit = time.Now()
		}
		cl.AllowRebalance()
	}
	commit(context.Background(), nil)
	if o.Close == "leave" && o.InstanceID != "" { // kgo's Close keeps a static member in the group
		cl.AllowRebalance()
		_ = cl.LeaveGroupContext(context.Background())
	}
	cl.CloseAllowingRebalance()
	log.Close()
}
