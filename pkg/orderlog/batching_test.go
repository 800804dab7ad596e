package orderlog

import (
	"flag"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/pkg/config"
)

// TestBatchedWriter: the settings' codec names all parse, and the batching
// reaches the writer while durability stays as NewWriter sets it.
func TestBatchedWriter(t *testing.T) {
	for name, want := range map[string]kafka.Compression{"none": 0, "gzip": kafka.Gzip, "snappy": kafka.Snappy, "lz4": kafka.Lz4, "zstd": kafka.Zstd} {
		got, err := ParseCompression(name)
		if err != nil || got != want {
			t.Errorf("ParseCompression(%q) = %v, %v; want %v", name, got, err, want)
		}
	}
	if _, err := ParseCompression("brotli"); err == nil {
		t.Error("brotli parsed")
	}
	w := NewBatchedWriter([]string{"127.0.0.1:1"}, "orders", time.Second, Batching{Size: 100, Bytes: 4096, Timeout: 500 * time.Microsecond, Compression: kafka.Lz4})
	defer w.Close()
	if w.BatchSize != 100 || w.BatchBytes != 4096 || w.BatchTimeout != 500*time.Microsecond || w.Compression != kafka.Lz4 {
		t.Errorf("batching not applied: size %d bytes %d timeout %v codec %v", w.BatchSize, w.BatchBytes, w.BatchTimeout, w.Compression)
	}
	if w.RequiredAcks != kafka.RequireAll || w.Async {
		t.Errorf("durability changed: acks %v async %v", w.RequiredAcks, w.Async)
	}
	d := NewWriter([]string{"127.0.0.1:1"}, "orders", time.Second)
	defer d.Close()
	b := DefaultBatching()
	if d.BatchSize != b.Size || d.BatchTimeout != b.Timeout || d.BatchBytes != b.Bytes {
		t.Errorf("NewWriter's batching %d/%v/%d is not DefaultBatching %+v", d.BatchSize, d.BatchTimeout, d.BatchBytes, b)
	}
	// The ingress's defaults are the writer's, so tests and tools that call
	// NewWriter measure what ships.
	var in config.Ingress
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	in.RegisterFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	codec, err := ParseCompression(in.PublishCompression)
	if err != nil || (Batching{Size: in.PublishBatchSize, Bytes: int64(in.PublishBatchBytes), Timeout: in.PublishBatchTimeout, Compression: codec}) != b {
		t.Errorf("ingress defaults %v/%d/%d/%q differ from DefaultBatching %+v", in.PublishBatchTimeout, in.PublishBatchSize, in.PublishBatchBytes, in.PublishCompression, b)
	}
}
