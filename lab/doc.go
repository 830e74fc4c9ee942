// Package lab is what every other package of linerate shares about one
// bench run: the workload (Workload, each field's parser, the value layout
// and each key's size) and the record (Result: its schema, merge of
// several clients' records, percentiles, HdrHistogram files). It opens no
// socket and binds no flag: the bench flags and the bounds a workload is
// held to (Validate, FieldError) are lab/fields, one package above;
// the engines are lab/engine, key choice lab/keys, pacing lab/pace, the
// text report lab/report.
package lab
