package main

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// batch is a record batch of n records, as far as countRecords reads it.
func batch(n int) []byte {
	b := make([]byte, 61+10*n)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	b[16] = 2 // magic
	binary.BigEndian.PutUint32(b[57:], uint32(n))
	return b
}

// frame is a whole Produce request (without its size) as a client writes it.
func frame(req *kmsg.ProduceRequest, clientID *string) []byte {
	out := binary.BigEndian.AppendUint16(nil, 0)
	out = binary.BigEndian.AppendUint16(out, uint16(req.Version))
	out = binary.BigEndian.AppendUint32(out, 7)
	if clientID == nil {
		out = binary.BigEndian.AppendUint16(out, 0xffff)
	} else {
		out = binary.BigEndian.AppendUint16(out, uint16(len(*clientID)))
		out = append(out, *clientID...)
	}
	if req.IsFlexible() {
		out = append(out, 0) // no header tags
	}
	return req.AppendTo(out)
}

func TestParseProduceReadsEveryVersionAClientMayWrite(t *testing.T) {
	id := [16]byte{1, 2, 3}
	ids := map[[16]byte]string{id: "t1"}
	client := "kbatch"
	for version := int16(3); version <= 13; version++ {
		for _, cid := range []*string{nil, &client} {
			req := kmsg.NewPtrProduceRequest()
			req.Version = version
			req.Acks = -1
			for ti, name := range []string{"t1", "t2"} {
				topic := kmsg.NewProduceRequestTopic()
				topic.Topic = name
				if ti == 0 {
					topic.TopicID = id
				}
				for p := 0; p < 2+ti; p++ {
					part := kmsg.NewProduceRequestTopicPartition()
					part.Partition = int32(p)
					part.Records = append(batch(p+1), batch(2)...) // two batches
					topic.Partitions = append(topic.Partitions, part)
				}
				req.Topics = append(req.Topics, topic)
			}
			got, err := parseProduce(frame(req, cid), ids)
			if err != nil {
				t.Fatalf("v%d: %v", version, err)
			}
			// t1: partitions 0,1 with 1+2, 2+2 records; t2: 0,1,2 with 3,4,5 records
			if len(got.parts) != 5 || got.records != 3+4+3+4+5 || got.acks != -1 {
				t.Fatalf("v%d: %+v", version, got)
			}
			if got.parts[0].topic != "t1" || got.parts[4].partition != 2 {
				t.Fatalf("v%d: %+v", version, got.parts)
			}
		}
	}
}

func TestAShortRequestIsAnErrorNotAPanic(t *testing.T) {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	topic := kmsg.NewProduceRequestTopic()
	topic.Topic = "t"
	part := kmsg.NewProduceRequestTopicPartition()
	part.Records = batch(3)
	topic.Partitions = append(topic.Partitions, part)
	req.Topics = append(req.Topics, topic)
	whole := frame(req, nil)
	for cut := 0; cut < len(whole); cut++ {
		if _, err := parseProduce(whole[:cut], nil); err == nil && cut < len(whole)-1 {
			t.Fatalf("a request cut at %d of %d bytes read as whole", cut, len(whole))
		}
	}
}

func TestPropertiesTextIsReadAsKbatchWritesIt(t *testing.T) {
	props := parseProperties("kbatch.topics=a,b\nclient.id=x\\=y\\: z\n\\ lead=\\u00e9\n")
	if props["kbatch.topics"] != "a,b" || props["client.id"] != "x=y: z" || props[" lead"] != "é" {
		t.Fatalf("%q", props)
	}
}
