package main

import (
	"os"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/vgsvg"
)

func newSVG(w, h vg.Length) vg.CanvasWriterTo { return vgsvg.New(w, h) }

func saveCanvas(c vg.CanvasWriterTo, name string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
