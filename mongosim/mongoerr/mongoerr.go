// Package mongoerr holds the server error codes mongosim replies with, named
// and numbered as mongod's error_codes.yml names them, so clients classify
// mongosim's failures exactly as they classify mongod's.
package mongoerr

import "fmt"

// Codes used by the simulator. Values are mongod's.
const (
	BadValue                        = 2
	Unauthorized                    = 13
	FailedToParse                   = 9
	TypeMismatch                    = 14
	InvalidBSON                     = 22
	IllegalOperation                = 20
	NamespaceNotFound               = 26
	InvalidNamespace                = 73
	CursorNotFound                  = 43
	MaxTimeMSExpired                = 50
	CommandNotFound                 = 59
	WriteConcernFailed              = 64
	InvalidOptions                  = 72
	InvalidReplicaSetConfig         = 93
	NotYetInitialized               = 94
	NoSuchKey                       = 4
	PathNotViable                   = 28
	ConflictingUpdateOperators      = 40
	ImmutableField                  = 66
	InvalidPipelineOperator         = 168
	NotImplemented                  = 238
	ExceededTimeLimit               = 262
	ShutdownInProgress              = 91
	PrimarySteppedDown              = 189
	Interrupted                     = 11601
	InterruptedDueToReplStateChange = 11602
	DuplicateKey                    = 11000
	NotWritablePrimary              = 10107
	NotPrimaryNoSecondaryOk         = 13435
	NotPrimaryOrSecondary           = 13436
	AlreadyInitialized              = 23
	NodeNotFound                    = 74
	UnrecognizedPipelineStage       = 40324
	ExceededMemoryLimit             = 146
	// QueryMemoryLimitExceeded's number is in no stored error_codes.yml
	// (the newest ends at 462); 464 is mongosim's choice. Its name is
	// mongod's: clients and qmlsab classify it by codeName.
	QueryMemoryLimitExceeded = 464
)

// The query engine's memory limits (mongosim/query).
const (
	// QueryExceededMemoryLimitNoDiskUseAllowed: a blocking stage went over
	// its memory limit and the query did not allow disk use.
	QueryExceededMemoryLimitNoDiskUseAllowed = 292
	// BSONObjectTooLarge: a stage was to produce a document over 16 MiB.
	BSONObjectTooLarge = 10334
)

// names maps a code to its codeName. Codes absent from mongod's named list
// (such as the location code of an unknown pipeline stage) are named
// "Location<code>", as mongod names them.
var names = map[int32]string{
	BadValue:                        "BadValue",
	Unauthorized:                    "Unauthorized",
	FailedToParse:                   "FailedToParse",
	TypeMismatch:                    "TypeMismatch",
	InvalidBSON:                     "InvalidBSON",
	IllegalOperation:                "IllegalOperation",
	NamespaceNotFound:               "NamespaceNotFound",
	InvalidNamespace:                "InvalidNamespace",
	CursorNotFound:                  "CursorNotFound",
	MaxTimeMSExpired:                "MaxTimeMSExpired",
	CommandNotFound:                 "CommandNotFound",
	WriteConcernFailed:              "WriteConcernFailed",
	InvalidOptions:                  "InvalidOptions",
	InvalidReplicaSetConfig:         "InvalidReplicaSetConfig",
	NotYetInitialized:               "NotYetInitialized",
	NoSuchKey:                       "NoSuchKey",
	PathNotViable:                   "PathNotViable",
	ConflictingUpdateOperators:      "ConflictingUpdateOperators",
	ImmutableField:                  "ImmutableField",
	InvalidPipelineOperator:         "InvalidPipelineOperator",
	NotImplemented:                  "NotImplemented",
	ExceededTimeLimit:               "ExceededTimeLimit",
	ShutdownInProgress:              "ShutdownInProgress",
	PrimarySteppedDown:              "PrimarySteppedDown",
	Interrupted:                     "Interrupted",
	InterruptedDueToReplStateChange: "InterruptedDueToReplStateChange",
	DuplicateKey:                    "DuplicateKey",
	NotWritablePrimary:              "NotWritablePrimary",
	NotPrimaryNoSecondaryOk:         "NotPrimaryNoSecondaryOk",
	NotPrimaryOrSecondary:           "NotPrimaryOrSecondary",
	AlreadyInitialized:              "AlreadyInitialized",
	NodeNotFound:                    "NodeNotFound",
	ExceededMemoryLimit:             "ExceededMemoryLimit",
	QueryMemoryLimitExceeded:        "QueryMemoryLimitExceeded",
	// The query engine's memory limits.
	QueryExceededMemoryLimitNoDiskUseAllowed: "QueryExceededMemoryLimitNoDiskUseAllowed",
	BSONObjectTooLarge:                       "BSONObjectTooLarge",
	// Sharding (the simulated router, mongosim/router*.go).
	6:   "HostUnreachable",
	61:  "ShardKeyNotFound",
	70:  "ShardNotFound",
	118: "NamespaceNotSharded",
	133: "FailedToSatisfyReadPreference",
}

// Name returns mongod's codeName for code.
func Name(code int32) string {
	if n, ok := names[code]; ok {
		return n
	}
	return fmt.Sprintf("Location%d", code)
}

// Error is a command failure as mongod reports it: {ok:0, errmsg, code,
// codeName, errorLabels}.
type Error struct {
	Code   int32
	Msg    string
	Labels []string
}

func (e *Error) Error() string { return fmt.Sprintf("(%s) %s", Name(e.Code), e.Msg) }

// CodeName is the error's codeName.
func (e *Error) CodeName() string { return Name(e.Code) }

// New returns an error with code and a formatted message.
func New(code int32, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// WithLabels returns a copy of e carrying the given error labels.
func (e *Error) WithLabels(labels ...string) *Error {
	c := *e
	c.Labels = append(append([]string(nil), e.Labels...), labels...)
	return &c
}
