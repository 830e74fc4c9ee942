// Package lab is what every other package of linerate shares about one
// bench run: the workload (Workload, its bounds, its flags, the value
// layout, key and size choice) and the record (Result: its schema, merge of
// several clients' records, percentiles, HdrHistogram files). It opens no
// socket; the engines are lab/engine, the text report lab/report.
package lab
