package config

import "net/netip"

// ParseCIDRs parses a comma-separated list of CIDR prefixes.
func ParseCIDRs(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, p := range split(s) {
		pfx, err := netip.ParsePrefix(p)
		if err != nil {
			return nil, err
		}
		out = append(out, pfx)
	}
	return out, nil
}
