package export

import (
	"github.com/klauspost/compress/s2"
	"github.com/parquet-go/parquet-go/compress/snappy"
)

// fastSnappy is parquet-go's SNAPPY codec with the faster of
// klauspost/compress's two Snappy encoders: parquet-go calls
// s2.EncodeSnappyBetter, this s2.EncodeSnappy. Both write the raw Snappy
// block format every Parquet reader decodes; this one spends less CPU for
// a few percent more octets (BENCHMARKS.md, "Export to Parquet").
type fastSnappy struct{ snappy.Codec }

func (fastSnappy) Encode(dst, src []byte) ([]byte, error) {
	return s2.EncodeSnappy(dst[:cap(dst)], src), nil
}
