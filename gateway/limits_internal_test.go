package gateway

import (
	"net"
	"testing"
)

// TestHostOf: a connection counts against its IPv4 address (an
// IPv4-mapped IPv6 address is one), the /64 of its IPv6 address (one
// machine is given a whole /64), or no host without an IP address.
func TestHostOf(t *testing.T) {
	tcp := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000} }
	for _, tt := range []struct {
		addr net.Addr
		want string
	}{
		{tcp("192.0.2.7"), "192.0.2.7"},
		{tcp("::ffff:192.0.2.7"), "192.0.2.7"},
		{tcp("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64"},
		{tcp("2001:db8:1:2:bbbb:cccc:dddd:eeee"), "2001:db8:1:2::/64"},
		{tcp("2001:db8:1:3::1"), "2001:db8:1:3::/64"},
		{tcp("::1"), "::/64"},
		{&net.UnixAddr{Name: "@", Net: "unix"}, ""},
		{nil, ""},
	} {
		if got := hostOf(tt.addr); got != tt.want {
			t.Errorf("hostOf(%v) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}
