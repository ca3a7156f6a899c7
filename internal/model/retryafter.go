package model

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxRetryAfter bounds what a header can ask for, so a hostile or broken value
// cannot overflow a Duration.
const maxRetryAfter = 24 * time.Hour

// retryAfter reads the wait a provider asks for: retry-after-ms (OpenAI), then
// Retry-After as seconds (possibly fractional) or an HTTP date relative to now.
// It returns 0 when there is none, it is unreadable, or the date has passed.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return clampWait(time.Duration(min(ms, float64(maxRetryAfter/time.Millisecond)) * float64(time.Millisecond)))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		switch {
		case math.IsNaN(s) || s <= 0:
			return 0
		case s > maxRetryAfter.Seconds():
			return maxRetryAfter
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return clampWait(d)
		}
	}
	return 0
}

func clampWait(d time.Duration) time.Duration {
	return min(max(d, 0), maxRetryAfter)
}
