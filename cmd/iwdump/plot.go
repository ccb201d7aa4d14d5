package main

import (
	"os"
	"strings"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/iograph"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/render"
	"github.com/iwkit/iwkit/ulp"
)

// plotConsumer prints records and collects the plots of one shard.
type plotConsumer struct {
	*render.Printer
	c *iograph.Collector
}

func (c *plotConsumer) Frame(fr *pcap.Frame) { c.c.Frame(fr) }

func (c *plotConsumer) Record(r *analyze.Record) {
	c.Printer.Record(r)
	c.c.Record(r)
}

// writePlot draws --plot (iograph.Write): the I/O graph, the RDMA Read
// latency distribution, and for storage traffic the command latencies per
// command, the queue depth and the flow-control windows over time.
func writePlot(p *iograph.Collector, s *ulp.Stats, name string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := iograph.Write(f, p, s, strings.HasSuffix(name, ".png")); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
