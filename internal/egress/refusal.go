package egress

import (
	"fmt"
	"io"
	"net/http"
)

// statusFor maps a refusal to the status the client sees.
func statusFor(r Reason) int {
	switch r {
	case ReasonBadRequest, ReasonBadHost, ReasonIPLiteral:
		return http.StatusBadRequest
	case ReasonResolveFailed, ReasonDialFailed, ReasonUpstreamTLS:
		return http.StatusBadGateway
	case ReasonConnLimit, ReasonByteLimit:
		return http.StatusTooManyRequests
	}
	return http.StatusForbidden
}

// writeRefusal answers a refused request. The body names the reason; it carries
// nothing the client did not send or the policy does not say.
func writeRefusal(w io.Writer, reason Reason, detail string) {
	body := "agentbox egress: " + string(reason) + ": " + detail + "\n"
	code := statusFor(reason)
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nX-Agentbox-Egress: %s\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		code, http.StatusText(code), reason, len(body), body)
}
