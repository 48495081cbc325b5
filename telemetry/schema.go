package telemetry

import _ "embed"

// RecordSchema is the JSON Schema of a decision-log record (draft 2020-12), for the
// organisation's pipeline: shippers and SIEMs can validate what they receive.
//
//go:embed record.schema.json
var RecordSchema []byte
