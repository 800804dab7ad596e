package httpapi

import (
	"net"
	"net/netip"

	"github.com/labstack/echo/v4"
)

// ipExtractor believes X-Forwarded-For only from the trusted proxies: Echo's
// XFF extractor trusts loopback and private ranges by default, which would
// let any client on those networks pick its own address, so those defaults
// are switched off and only the configured CIDRs count.
func ipExtractor(trusted []netip.Prefix) echo.IPExtractor {
	if len(trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, p := range trusted {
		p = p.Masked()
		opts = append(opts, echo.TrustIPRange(&net.IPNet{
			IP:   net.IP(p.Addr().AsSlice()),
			Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen()),
		}))
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}
