package stock

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckInfoJudgesVersionAndPolicy(t *testing.T) {
	for _, tc := range []struct {
		info string
		want []string // substrings of the error; none: fit
	}{
		{"# Server\r\nredis_version:7.0.15\r\n# Memory\r\nmaxmemory_policy:noeviction\r\n", nil},
		{"redis_version:7.2.4\nmaxmemory_policy:noeviction\n", nil},
		{"redis_version:8.0.0\nmaxmemory_policy:noeviction\n", nil},
		{"redis_version:6.2.14\nmaxmemory_policy:noeviction\n", []string{`version "6.2.14"`}},
		{"redis_version:7.0.15\nmaxmemory_policy:allkeys-lru\n", []string{`maxmemory-policy "allkeys-lru"`}},
		{"redis_version:5.0.7\nmaxmemory_policy:volatile-lru\n", []string{`version "5.0.7"`, `"volatile-lru"`}},
		{"", []string{`version ""`, `maxmemory-policy ""`}},
	} {
		err := checkInfo(tc.info)
		if len(tc.want) == 0 {
			if err != nil {
				t.Errorf("%q: %v, want fit", tc.info, err)
			}
			continue
		}
		if !errors.Is(err, ErrServerUnfit) {
			t.Errorf("%q: %v, want ErrServerUnfit", tc.info, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: %v, want it to say %s", tc.info, err, w)
			}
		}
	}
}
