package main

// Kafka-named settings read for a Go client: each one a client takes is removed from the
// map, so what is left is what the client lacks (refused by name in run).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/IBM/sarama"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

type settingsOf struct {
	client string
	values map[string]string
	err    error
}

func (s *settingsOf) take(name string) (string, bool) {
	v, ok := s.values[name]
	if ok {
		delete(s.values, name)
	}
	return strings.TrimSpace(v), ok
}

func (s *settingsOf) fail(name, value, want string) {
	if s.err == nil {
		s.err = &configError{fmt.Sprintf("%s: %s=%q is not %s", s.client, name, value, want)}
	}
}

func (s *settingsOf) integer(name string) (int, bool) {
	v, ok := s.take(name)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		s.fail(name, v, "a whole number >= 0")
		return 0, false
	}
	return n, true
}

func (s *settingsOf) millis(name string) (time.Duration, bool) {
	v, ok := s.take(name)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		s.fail(name, v, "a duration in milliseconds >= 0")
		return 0, false
	}
	return time.Duration(f * float64(time.Millisecond)), true
}

func (s *settingsOf) boolean(name string) (bool, bool) {
	v, ok := s.take(name)
	if !ok {
		return false, false
	}
	b, err := strconv.ParseBool(strings.ToLower(v))
	if err != nil {
		s.fail(name, v, "true or false")
		return false, false
	}
	return b, true
}

// acks is 0, 1 or -1 (all).
func (s *settingsOf) acks() (int, bool) {
	v, ok := s.take("acks")
	if !ok {
		return 0, false
	}
	switch strings.ToLower(v) {
	case "0":
		return 0, true
	case "1":
		return 1, true
	case "all", "-1":
		return -1, true
	}
	s.fail("acks", v, "0, 1, all or -1")
	return 0, false
}

// choice is one of the allowed values (compression.type).
func (s *settingsOf) choice(name string, allowed ...string) (string, bool) {
	v, ok := s.take(name)
	if !ok {
		return "", false
	}
	for _, a := range allowed {
		if strings.ToLower(v) == a {
			return a, true
		}
	}
	s.fail(name, v, "one of "+strings.Join(allowed, ", "))
	return "", false
}

// reasonOf names an error for the results, and says whether the message it settles may
// nevertheless be in the topic (a timeout or a lost connection, not a broker's refusal).
func reasonOf(err error) (string, bool) {
	if e, ok := errorsAs[*kerr.Error](err); ok {
		return e.Message, e == kerr.RequestTimedOut
	}
	if e, ok := errorsAs[sarama.KError](err); ok {
		return strings.TrimPrefix(e.Error(), "kafka server: "), e == sarama.ErrRequestTimedOut
	}
	if e, ok := errorsAs[kafkago.Error](err); ok {
		return e.Title(), e == kafkago.RequestTimedOut
	}
	switch {
	case errors.Is(err, kgo.ErrRecordTimeout), errors.Is(err, context.DeadlineExceeded):
		return "Timeout", true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, sarama.ErrOutOfBrokers), errors.Is(err, sarama.ErrNotConnected):
		return "NetworkException", true
	}
	if e, ok := errorsAs[net.Error](err); ok {
		if e.Timeout() {
			return "Timeout", true
		}
		return "NetworkException", true
	}
	text := err.Error()
	if len(text) > 80 {
		text = text[:80]
	}
	return text, false
}
