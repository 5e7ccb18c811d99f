// A confluent-kafka-go (librdkafka through Go) group member for kafka-coop's test bed: the Java member's
// command line, RebalanceEvent lines, offsets committed on revoke, a clean close on SIGTERM.
//
// The rebalance protocol is librdkafka's own answer (GetRebalanceProtocol: EAGER or COOPERATIVE; in a
// KIP-848 group it answers COOPERATIVE, so the member reports consumer there); librdkafka refuses an
// assignor list that mixes eager and cooperative.
package main

import (
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"kafka-coop/interop/member"
)

func tps(parts []kafka.TopicPartition) []member.TP {
	out := make([]member.TP, 0, len(parts))
	for _, p := range parts {
		out = append(out, member.TP{Topic: *p.Topic, Partition: p.Partition})
	}
	return out
}

func main() {
	o := member.Parse()
	stop := member.Terminated() // first: the library may join before the poll loop starts
	if o.Close != "default" {
		member.Fail("librdkafka has no close option to leave or remain in the group; use --close default")
	}
	conf := kafka.ConfigMap{
		"bootstrap.servers":  o.Bootstrap,
		"group.id":           o.Group,
		"enable.auto.commit": false,
		"auto.offset.reset":  "earliest",
	}
	if o.ClientID != "" {
		conf["client.id"] = o.ClientID
	}
	if o.InstanceID != "" {
		conf["group.instance.id"] = o.InstanceID
	}
	if o.GroupProtocol == "consumer" {
		conf["group.protocol"] = "consumer"
		if o.RemoteAssignor != "" {
			conf["group.remote.assignor"] = o.RemoteAssignor
		}
	} else {
		conf["partition.assignment.strategy"] = strings.Join(o.Assignors, ",")
	}
	for k, v := range o.Props {
		conf[k] = v
	}
	c, err := kafka.NewConsumer(&conf)
	if err != nil {
		member.Fail("librdkafka refused the configuration: " + err.Error())
	}
	log := member.Open(o)
	clientID := o.ClientID
	if clientID == "" {
		clientID = "rdkafka"
	}
	protocol := func() string {
		if o.GroupProtocol == "consumer" { // librdkafka answers COOPERATIVE there: incremental callbacks
			return "consumer"
		}
		switch c.GetRebalanceProtocol() {
		case "COOPERATIVE":
			return "cooperative"
		}
		return "eager"
	}
	// confluent-kafka-go does not expose rd_kafka_memberid(); events carry an empty member id.
	memberID := func() string { return "" }
	incremental := func() bool { return protocol() != "eager" }
	commit := func(parts []member.TP) (map[member.TP]int64, string) {
		offsets := log.Processed(parts)
		if len(offsets) == 0 {
			return nil, ""
		}
		var req []kafka.TopicPartition
		for tp, off := range offsets {
			topic := tp.Topic
			req = append(req, kafka.TopicPartition{Topic: &topic, Partition: tp.Partition, Offset: kafka.Offset(off)})
		}
		if _, err := c.CommitOffsets(req); err != nil {
			return map[member.TP]int64{}, err.Error()
		}
		return offsets, ""
	}
	rebalance := func(c *kafka.Consumer, ev kafka.Event) error {
		t0 := time.Now()
		switch e := ev.(type) {
		case kafka.AssignedPartitions:
			if incremental() {
				_ = c.IncrementalAssign(e.Partitions)
			} else {
				_ = c.Assign(e.Partitions)
			}
			log.Emit(member.Event{Kind: "assigned", MemberID: memberID(), ClientID: clientID, Protocol: protocol(), Parts: tps(e.Partitions), Started: t0})
		case kafka.RevokedPartitions:
			parts := tps(e.Partitions)
			kind := "revoked"
			var committed map[member.TP]int64
			var failure string
			if c.AssignmentLost() {
				kind = "lost"
			} else {
				committed, failure = commit(parts)
			}
			if incremental() {
				_ = c.IncrementalUnassign(e.Partitions)
			} else {
				_ = c.Unassign()
			}
			log.Emit(member.Event{Kind: kind, MemberID: memberID(), ClientID: clientID, Protocol: protocol(), Parts: parts, Committed: committed, Error: failure, Started: t0})
		}
		return nil
	}
	if err := c.SubscribeTopics(o.Topics, rebalance); err != nil {
		member.Fail("subscribe failed: " + err.Error())
	}
	member.Ready()
	lastCommit := time.Now()
	for running := true; running; {
		select {
		case <-stop:
			running = false
			continue
		default:
		}
		switch e := c.Poll(100).(type) {
		case *kafka.Message:
			log.Record(clientID, member.TP{Topic: *e.TopicPartition.Topic, Partition: e.TopicPartition.Partition}, int64(e.TopicPartition.Offset), e.Timestamp.UnixMilli())
			log.Flush()
		}
		if time.Since(lastCommit) >= time.Second {
			commit(nil)
			lastCommit = time.Now()
		}
	}
	commit(nil)
	_ = c.Close() // runs the final revoke through the rebalance callback, then leaves
	log.Close()
}
