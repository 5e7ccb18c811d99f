// An IBM/sarama group member for kafka-coop's test bed: the Java member's command line, RebalanceEvent
// lines, offsets committed before partitions are released, a clean close on SIGTERM.
//
// sarama picks one rebalance protocol for the consumer, "the most preferred protocol common to every
// configured strategy" (rebalance_protocol.go), as Java does: a mixed eager+cooperative list runs eager.
// Eager: every rebalance ends the session (Setup = the whole assignment, Cleanup = revoke everything).
// Cooperative: the session survives; a claim starting is an assigned partition, a claim whose Messages
// channel closes is a revoked one (consumer_group.go, Consume).
package main

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"kafka-coop/interop/member"
)

func strategy(name string) (sarama.BalanceStrategy, bool) {
	switch name {
	case "range":
		return sarama.NewBalanceStrategyRange(), false
	case "roundrobin":
		return sarama.NewBalanceStrategyRoundRobin(), false
	case "sticky":
		return sarama.NewBalanceStrategySticky(), false
	case "cooperative-sticky":
		return sarama.NewBalanceStrategyCooperativeSticky(), true
	}
	member.Fail("sarama has no assignor " + name + " (it ships range, roundrobin, sticky, cooperative-sticky)")
	return nil, false
}

type handler struct {
	log         *member.Log
	clientID    string
	protocol    string
	mu          sync.Mutex
	lastSession sarama.ConsumerGroupSession
}

func claims(m map[string][]int32) []member.TP {
	var out []member.TP
	for topic, parts := range m {
		for _, p := range parts {
			out = append(out, member.TP{Topic: topic, Partition: p})
		}
	}
	return out
}

func (h *handler) commit(s sarama.ConsumerGroupSession, parts []member.TP) map[member.TP]int64 {
	offsets := h.log.Processed(parts)
	if len(offsets) == 0 {
		return nil
	}
	for tp, off := range offsets {
		s.MarkOffset(tp.Topic, tp.Partition, off, "")
	}
	s.Commit()
	return offsets
}

func (h *handler) Setup(s sarama.ConsumerGroupSession) error {
	h.mu.Lock()
	h.lastSession = s
	h.mu.Unlock()
	if h.protocol == "eager" {
		h.log.Emit(member.Event{Kind: "assigned", MemberID: s.MemberID(), ClientID: h.clientID, Protocol: h.protocol, Parts: claims(s.Claims()), Started: time.Now()})
	}
	return nil
}

func (h *handler) Cleanup(s sarama.ConsumerGroupSession) error {
	t0 := time.Now()
	owned := h.log.Owned()
	committed := h.commit(s, owned)
	if h.protocol == "eager" || len(owned) > 0 {
		h.log.Emit(member.Event{Kind: "revoked", MemberID: s.MemberID(), ClientID: h.clientID, Protocol: h.protocol, Parts: owned, Committed: committed, Started: t0})
	}
	return nil
}

func (h *handler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	tp := member.TP{Topic: c.Topic(), Partition: c.Partition()}
	if h.protocol == "cooperative" {
		h.log.Emit(member.Event{Kind: "assigned", MemberID: s.MemberID(), ClientID: h.clientID, Protocol: h.protocol, Parts: []member.TP{tp}, Started: time.Now()})
	}
	for msg := range c.Messages() {
		h.log.Record(h.clientID, tp, msg.Offset, msg.Timestamp.UnixMilli())
		h.log.Flush()
	}
	if h.protocol == "cooperative" && s.Context().Err() == nil {
		t0 := time.Now()
		committed := h.commit(s, []member.TP{tp})
		h.log.Emit(member.Event{Kind: "revoked", MemberID: s.MemberID(), ClientID: h.clientID, Protocol: h.protocol, Parts: []member.TP{tp}, Committed: committed, Started: t0})
	}
	return nil
}

func main() {
	o := member.Parse()
	stop := member.Terminated() // first: the library may join before the poll loop starts
	if o.GroupProtocol == "consumer" {
		member.Fail("sarama does not speak the KIP-848 consumer group protocol; use --group-protocol classic")
	}
	if o.Close != "default" {
		member.Fail("sarama has no close option to leave or remain in the group; use --close default")
	}
	for k := range o.Props {
		member.Fail("sarama takes options in code, not properties; --prop " + k + " is not supported")
	}
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V4_0_0_0
	if o.ClientID != "" {
		cfg.ClientID = o.ClientID
	}
	cooperativeAll := true
	var strategies []sarama.BalanceStrategy
	for _, name := range o.Assignors {
		s, coop := strategy(name)
		cooperativeAll = cooperativeAll && coop
		strategies = append(strategies, s)
	}
	cfg.Consumer.Group.Rebalance.GroupStrategies = strategies
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	if o.InstanceID != "" {
		cfg.Consumer.Group.InstanceId = o.InstanceID
	}
	h := &handler{log: member.Open(o), clientID: cfg.ClientID, protocol: "eager"}
	if cooperativeAll {
		h.protocol = "cooperative"
	}
	group, err := sarama.NewConsumerGroup(strings.Split(o.Bootstrap, ","), o.Group, cfg)
	if err != nil {
		member.Fail("sarama refused the configuration: " + err.Error())
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-stop; cancel() }()
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				h.mu.Lock()
				s := h.lastSession
				h.mu.Unlock()
				if s != nil && s.Context().Err() == nil {
					h.commit(s, h.log.Owned())
				}
			}
		}
	}()
	member.Ready()
	for ctx.Err() == nil {
		if err := group.Consume(ctx, o.Topics, h); err != nil {
			if errors.Is(err, sarama.ErrClosedConsumerGroup) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	_ = group.Close()
	h.log.Close()
}
