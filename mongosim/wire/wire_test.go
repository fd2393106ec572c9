package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/qmlsab/qmlsab/internal/bsoncheck"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/wiremessage"
)

func mustDoc(t testing.TB, d bson.D) []byte {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// msgWithSequence builds an OP_MSG with a body and one kind-1 section.
func msgWithSequence(t testing.TB, flags wiremessage.MsgFlag, body []byte, id string, docs ...[]byte) []byte {
	idx, b := wiremessage.AppendHeaderStart(nil, 7, 0, OpMsg)
	b = wiremessage.AppendMsgFlags(b, flags)
	b = wiremessage.AppendMsgSectionType(b, wiremessage.SingleDocument)
	b = append(b, body...)
	b = wiremessage.AppendMsgSectionType(b, wiremessage.DocumentSequence)
	seqStart := len(b)
	b = append(b, 0, 0, 0, 0)
	b = append(b, id...)
	b = append(b, 0)
	for _, d := range docs {
		b = append(b, d...)
	}
	binary.LittleEndian.PutUint32(b[seqStart:], uint32(len(b)-seqStart))
	if flags&FlagChecksumPresent != 0 {
		b = append(b, 1, 2, 3, 4)
	}
	return bsoncore.UpdateLength(b, idx, int32(len(b[idx:])))
}

func legacyQuery(t testing.TB, ns string, q []byte) []byte {
	idx, b := wiremessage.AppendHeaderStart(nil, 3, 0, OpQuery)
	b = wiremessage.AppendQueryFlags(b, 0)
	b = wiremessage.AppendQueryFullCollectionName(b, ns)
	b = wiremessage.AppendQueryNumberToSkip(b, 0)
	b = wiremessage.AppendQueryNumberToReturn(b, -1)
	b = append(b, q...)
	return bsoncore.UpdateLength(b, idx, int32(len(b[idx:])))
}

func TestParseOpMsgWithSequenceAndChecksum(t *testing.T) {
	body := mustDoc(t, bson.D{{Key: "insert", Value: "c"}, {Key: "$db", Value: "d"}})
	docs := [][]byte{mustDoc(t, bson.D{{Key: "_id", Value: 1}}), mustDoc(t, bson.D{{Key: "_id", Value: 2}})}
	raw := msgWithSequence(t, FlagChecksumPresent, body, "documents", docs...)
	m, _, err := Read(bytes.NewReader(raw), nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.OpCode != OpMsg || !bytes.Equal(m.Body, body) || len(m.Sequences) != 1 {
		t.Fatalf("parsed %+v", m)
	}
	if s := m.Sequences[0]; s.Identifier != "documents" || len(s.Docs) != 2 || !bytes.Equal(s.Docs[1], docs[1]) {
		t.Fatalf("sequence %+v", s)
	}
}

func TestParseLegacyQueryAndReplyRoundTrip(t *testing.T) {
	q := mustDoc(t, bson.D{{Key: "isMaster", Value: 1}, {Key: "helloOk", Value: true}})
	m, err := Parse(legacyQuery(t, "admin.$cmd", q))
	if err != nil || m.FullCollectionName != "admin.$cmd" || !bytes.Equal(m.Query, q) {
		t.Fatalf("OP_QUERY: %+v %v", m, err)
	}
	reply, err := Parse(AppendReply(nil, 9, 3, q))
	if err != nil || reply.ResponseTo != 3 || len(reply.Documents) != 1 {
		t.Fatalf("OP_REPLY round trip: %+v %v", reply, err)
	}
}

func TestReadRejectsHostileLengths(t *testing.T) {
	for name, raw := range map[string][]byte{
		"too short":  {8, 0, 0, 0, 1, 2, 3, 4},
		"negative":   {0xff, 0xff, 0xff, 0xff},
		"over 48 MB": binary.LittleEndian.AppendUint32(nil, MaxMessageSize+1),
	} {
		if _, _, err := Read(bytes.NewReader(raw), nil); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", name, err)
		}
	}
}

func TestParseRejectsMalformedMessages(t *testing.T) {
	body := mustDoc(t, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})
	good := AppendMsg(nil, 1, 0, 0, body)
	bad := map[string][]byte{}
	b := append([]byte(nil), good...)
	b[len(b)-1] = 7 // document missing its terminating NUL
	bad["unterminated body"] = b
	b = append([]byte(nil), good...)
	binary.LittleEndian.PutUint32(b[16:], 1<<3) // required flag bit 3 is unknown
	bad["unknown required flag"] = b
	b = msgWithSequence(t, 0, body, "documents", mustDoc(t, bson.D{{Key: "x", Value: 1}}))
	binary.LittleEndian.PutUint32(b[16+4+1+len(body)+1:], 1<<30) // sequence size past the end
	bad["sequence size past end"] = b
	// A body the driver's own Validate passes: {$project: {v: 0, "v$\x03w":
	// <string declaring length 0>}}; a command reading it would panic.
	bad["malformed value one level down"] = AppendMsg(nil, 1, 0, 0,
		[]byte("%\x00\x00\x00\x03$project\x00\x16\x00\x00\x00\x10v\x00\x00\x00\x00\x00\x02v$\x03w\x00\x00\x00\x00\x00\x00\x00"))
	idx, nb := wiremessage.AppendHeaderStart(nil, 1, 0, OpMsg)
	nb = wiremessage.AppendMsgFlags(nb, 0)
	bad["no body section"] = bsoncore.UpdateLength(nb, idx, int32(len(nb)))
	bad["unknown opcode"] = func() []byte {
		idx, x := wiremessage.AppendHeaderStart(nil, 1, 0, wiremessage.OpCode(9999))
		x = append(x, body...)
		return bsoncore.UpdateLength(x, idx, int32(len(x)))
	}()
	for name, raw := range bad {
		if _, err := Parse(raw); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", name, err)
		}
	}
}

// FuzzParse feeds arbitrary bytes to the codec: it must return a message or
// an error, never panic, and every document it returns must be valid BSON
// in every value at every depth.
func FuzzParse(f *testing.F) {
	body := mustDoc(f, bson.D{{Key: "insert", Value: "c"}, {Key: "$db", Value: "d"}})
	f.Add(AppendMsg(nil, 1, 0, 0, body))
	f.Add(AppendMsg(nil, 1, 0, FlagExhaustAllowed, mustDoc(f, bson.D{{Key: "hello", Value: 1}, {Key: "maxAwaitTimeMS", Value: 10000}})))
	f.Add(msgWithSequence(f, FlagChecksumPresent, body, "documents", mustDoc(f, bson.D{{Key: "_id", Value: 1}})))
	f.Add(legacyQuery(f, "admin.$cmd", mustDoc(f, bson.D{{Key: "isMaster", Value: 1}})))
	f.Add(AppendReply(nil, 1, 1, body))
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, _, err := Read(bytes.NewReader(raw), nil)
		if err != nil {
			return
		}
		check := func(d []byte) {
			if err := bsoncheck.Document(d); err != nil {
				t.Fatalf("accepted invalid document: %v", err)
			}
		}
		if m.Body != nil {
			check(m.Body)
		}
		if m.Query != nil {
			check(m.Query)
		}
		for _, s := range m.Sequences {
			for _, d := range s.Docs {
				check(d)
			}
		}
		for _, d := range m.Documents {
			check(d)
		}
	})
}
