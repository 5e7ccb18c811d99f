// Package member is what every Go test-bed member shares with the Java one (interop/java): the command
// line, RebalanceEvent JSON lines (the schema in kafka_coop/events.py), the record log and SIGTERM.
// Each cmd/<library> program only wires its library's consumer to these.
package member

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Options is the Java member's command line (one consumer per process).
type Options struct {
	Bootstrap      string
	Group          string
	Topics         []string
	Assignors      []string
	GroupProtocol  string
	RemoteAssignor string
	InstanceID     string
	ClientID       string
	Events         string
	Records        string
	Close          string
	ProcessMs      int
	Props          map[string]string
}

type propFlag map[string]string

func (p propFlag) String() string { return "" }
func (p propFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("--prop expects key=value, got %s", v)
	}
	p[k] = val
	return nil
}

// Parse reads the command line; a usage error exits 2 with one sentence.
func Parse() Options {
	o := Options{Props: map[string]string{}}
	fs := flag.NewFlagSet(os.Args[0], flag.ContinueOnError)
	topics := fs.String("topics", "", "comma-separated topics")
	assignors := fs.String("assignors", "range", "ordered assignors")
	members := fs.Int("members", 1, "consumers in this process (only 1)")
	fs.StringVar(&o.Bootstrap, "bootstrap", "", "bootstrap servers")
	fs.StringVar(&o.Group, "group", "", "group id")
	fs.StringVar(&o.GroupProtocol, "group-protocol", "classic", "classic or consumer")
	fs.StringVar(&o.RemoteAssignor, "remote-assignor", "", "KIP-848 server-side assignor")
	fs.StringVar(&o.InstanceID, "instance-id", "", "group.instance.id")
	fs.StringVar(&o.ClientID, "client-id", "", "client id (empty: the library's default)")
	fs.StringVar(&o.Events, "events", "-", "RebalanceEvent JSON lines file")
	fs.StringVar(&o.Records, "records", "", "processed-records log")
	fs.StringVar(&o.Close, "close", "default", "default, leave or remain")
	fs.IntVar(&o.ProcessMs, "process-ms", 0, "sleep per record")
	fs.Var(propFlag(o.Props), "prop", "library option key=value (repeatable)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if *topics != "" {
		o.Topics = strings.Split(*topics, ",")
	}
	if *assignors != "" {
		o.Assignors = strings.Split(*assignors, ",")
	}
	if o.Bootstrap == "" || o.Group == "" || len(o.Topics) == 0 {
		Fail("--bootstrap, --group and --topics are required")
	}
	if *members != 1 {
		Fail("this member runs one consumer per process; use --members 1")
	}
	if o.GroupProtocol != "classic" && o.GroupProtocol != "consumer" {
		Fail("--group-protocol is classic or consumer, not " + o.GroupProtocol)
	}
	return o
}

// Fail prints one sentence and exits 2 (bad input for this library).
func Fail(msg string) {
	fmt.Fprintln(os.Stderr, "error: "+msg)
	os.Exit(2)
}

// TP is a topic-partition.
type TP struct {
	Topic     string
	Partition int32
}

func (t TP) MarshalJSON() ([]byte, error) { return json.Marshal([]any{t.Topic, t.Partition}) }

// Sorted returns tps in (topic, partition) order.
func Sorted(tps []TP) []TP {
	out := append([]TP(nil), tps...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// Log writes events and processed records; it tracks what the member owns and what it processed.
type Log struct {
	mu         sync.Mutex
	opts       Options
	events     *os.File
	records    *bufio.Writer
	recordFile *os.File
	seq        int64
	owned      map[TP]bool
	processed  map[TP]int64
}

// Open opens the event and record files named on the command line.
func Open(o Options) *Log {
	l := &Log{opts: o, owned: map[TP]bool{}, processed: map[TP]int64{}}
	if o.Events == "-" {
		l.events = os.Stdout
	} else {
		f, err := os.OpenFile(o.Events, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			Fail("cannot open events file: " + err.Error())
		}
		l.events = f
	}
	if o.Records != "" {
		f, err := os.OpenFile(o.Records, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			Fail("cannot open records file: " + err.Error())
		}
		l.recordFile = f
		l.records = bufio.NewWriterSize(f, 1<<16)
	}
	return l
}

// Record logs one processed record and remembers its offset for the next commit.
func (l *Log) Record(clientID string, tp TP, offset int64, producedMs int64) {
	if l.opts.ProcessMs > 0 {
		time.Sleep(time.Duration(l.opts.ProcessMs) * time.Millisecond)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.processed[tp] = offset
	if l.records != nil {
		fmt.Fprintf(l.records, "%s %s %d %d %d %d\n", clientID, tp.Topic, tp.Partition, offset, producedMs, time.Now().UnixMilli())
	}
}

// Flush writes buffered record lines out.
func (l *Log) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.records != nil {
		_ = l.records.Flush()
	}
}

// Processed returns next-offset-to-commit for the given partitions (all processed ones if nil).
func (l *Log) Processed(only []TP) map[TP]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[TP]int64{}
	if only == nil {
		for tp, off := range l.processed {
			out[tp] = off + 1
		}
		return out
	}
	for _, tp := range only {
		if off, ok := l.processed[tp]; ok {
			out[tp] = off + 1
		}
	}
	return out
}

// Event is one RebalanceEvent line.
type Event struct {
	Kind      string
	MemberID  string
	ClientID  string
	Protocol  string
	Parts     []TP
	Committed map[TP]int64 // nil: no commit attempted
	Error     string
	Started   time.Time
}

// Emit applies the callback to what the member owns and writes the event line.
func (l *Log) Emit(e Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, tp := range e.Parts {
		if e.Kind == "assigned" {
			l.owned[tp] = true
		} else {
			delete(l.owned, tp)
			delete(l.processed, tp)
		}
	}
	owned := make([]TP, 0, len(l.owned))
	for tp := range l.owned {
		owned = append(owned, tp)
	}
	var committed any
	if e.Committed != nil {
		rows := make([][]any, 0, len(e.Committed))
		keys := make([]TP, 0, len(e.Committed))
		for tp := range e.Committed {
			keys = append(keys, tp)
		}
		for _, tp := range Sorted(keys) {
			rows = append(rows, []any{tp.Topic, tp.Partition, e.Committed[tp]})
		}
		committed = rows
	}
	var instance any
	if l.opts.InstanceID != "" {
		instance = l.opts.InstanceID
	}
	var errText any
	if e.Error != "" {
		errText = e.Error
	}
	line, _ := json.Marshal(map[string]any{
		"v":           1,
		"ts_ms":       time.Now().UnixMilli(),
		"seq":         l.seq,
		"group":       l.opts.Group,
		"member_id":   e.MemberID,
		"instance_id": instance,
		"client_id":   e.ClientID,
		"protocol":    e.Protocol,
		"kind":        e.Kind,
		"partitions":  nonNil(Sorted(e.Parts)),
		"owned":       nonNil(Sorted(owned)),
		"callback_ms": float64(time.Since(e.Started).Microseconds()) / 1000.0,
		"committed":   committed,
		"error":       errText,
	})
	l.seq++
	_, _ = l.events.Write(append(line, '\n'))
}

// Owned is what the member holds now.
func (l *Log) Owned() []TP {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]TP, 0, len(l.owned))
	for tp := range l.owned {
		out = append(out, tp)
	}
	return Sorted(out)
}

func nonNil(tps []TP) []TP {
	if tps == nil {
		return []TP{}
	}
	return tps
}

// Close flushes and closes the files.
func (l *Log) Close() {
	l.Flush()
	if l.recordFile != nil {
		_ = l.recordFile.Close()
	}
	if l.events != os.Stdout {
		_ = l.events.Close()
	}
}

// Terminated is closed on SIGTERM or SIGINT.
func Terminated() <-chan struct{} {
	done := make(chan struct{})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		close(done)
	}()
	return done
}

// Ready tells the fleet runner the member started.
func Ready() {
	fmt.Println("READY 1")
}
