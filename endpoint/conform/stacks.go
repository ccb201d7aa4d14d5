package conform

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/endpoint"
)

// The cases of this file check how a target takes part in the MPA
// exchanges deployed stacks use beyond RFC 5044 (issue 28): the MPA v2 → v1
// fallback Linux cxgb4 performs (c4iw_reconnect; RFC 6581 §10), and Alibaba
// erdma's Rev 129. They drive the exchange themselves (Case.mpa).

func stackCases() []Case {
	return []Case{
		{ID: "mpa-v1-after-refused-v2", Clause: "RFC 6581 §10 (cxgb4 c4iw_reconnect)",
			Sent:   "MPA v2 Request; on a reset or close without a Reply, an MPA v1 Request on a new connection",
			expect: expect{ok: true}, mpa: v1AfterRefusedV2},
		{ID: "mpa-v1-retry-after-abort", Clause: "RFC 6581 §10 (cxgb4 c4iw_reconnect)",
			Sent:   "(listening) a reset in answer to the target's MPA v2 Request",
			expect: expect{ok: true}, mpa: v1RetryAfterAbort},
		{ID: "mpa-rev", Clause: "RFC 5044 §7.1.1 (MPA-02), RFC 6581 §6",
			Sent:   "our MPA Request; the target's Reply revision is checked",
			expect: expect{ok: true}, mpa: replyRevision},
	}
}

// v1AfterRefusedV2: the target must hold the connection: accept the v2
// Request, or (an RFC 5044-only target) refuse it and accept our v1 retry.
func v1AfterRefusedV2(ctx context.Context, o *Options, ln *endpoint.Listener) (got, verdict, reason string) {
	if ln != nil {
		return "n/a", Skip, "the suite listens (the target is the Initiator)"
	}
	cfg := o.Config
	if cfg.Rev != 0 && cfg.Rev != 2 {
		return "n/a", Skip, fmt.Sprintf("MPA Rev %d configured; the case starts with Rev 2", cfg.Rev)
	}
	cfg.Rev, cfg.FallbackV1 = 2, true
	c, err := open(ctx, o, nil, cfg, false)
	if err != nil {
		return "no connection: " + err.Error(), Fail, "neither the v2 Request nor the v1 retry was accepted"
	}
	defer c.close()
	p := c.ec.Params()
	if p.FellBackV1 {
		return fmt.Sprintf("v2 Request reset, v1 retry accepted (fallback cost %v)", p.FallbackCost.Round(time.Microsecond)), Pass, ""
	}
	return fmt.Sprintf("v2 Request accepted (Rev %d Reply)", p.PeerRev), Pass, ""
}

// v1RetryAfterAbort: the target (dialing us) must come back with an MPA
// v1 Request after we reset its v2 Request.
func v1RetryAfterAbort(ctx context.Context, o *Options, ln *endpoint.Listener) (got, verdict, reason string) {
	if ln == nil {
		return "n/a", Skip, "the suite dials (use --listen, the target as Initiator)"
	}
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := ln.Accept(actx)
	if err != nil {
		return "no MPA Request: " + err.Error(), Fail, ""
	}
	if !req.Enhanced {
		req.Close()
		return fmt.Sprintf("first Request Rev %d without the RFC 6581 block", req.Rev), Skip, "the target starts with MPA v1: nothing to fall back from"
	}
	req.Reset()
	start := time.Now()
	rctx, rcancel := context.WithTimeout(ctx, o.Timeout+time.Second)
	defer rcancel()
	retry, err := ln.Accept(rctx)
	if err != nil {
		return "no retry after our reset (" + err.Error() + ")", Fail, "an Initiator that falls back reconnects with MPA v1"
	}
	defer retry.Close()
	if retry.Enhanced || retry.Rev != 1 {
		return fmt.Sprintf("retry with Rev %d (enhanced %v)", retry.Rev, retry.Enhanced), Fail, "the retry after a refused v2 Request is MPA v1"
	}
	return fmt.Sprintf("v1 retry %v after our reset", time.Since(start).Round(time.Millisecond)), Pass, ""
}

// replyRevision: the target's Reply carries an RFC revision (1 or 2)
// mirroring our Request, or erdma's 129 when we speak it. A target that
// answers with erdma's Rev 129 is named.
func replyRevision(ctx context.Context, o *Options, ln *endpoint.Listener) (got, verdict, reason string) {
	if ln != nil {
		return "n/a", Skip, "the suite listens"
	}
	c, err := open(ctx, o, nil, o.Config, false)
	if err != nil {
		var me *endpoint.MPAError
		if errors.As(err, &me) && me.ERDMA {
			return "Reply Rev 129 (Alibaba erdma)", Fail, "the target speaks Alibaba erdma's MPA (Rev 129 with an 8-octet extension, not an RFC revision); rerun with --mpa-rev 129 to test it in its own dialect"
		}
		if o.Config.Rev != decode.MPARevERDMA {
			// A target that closes on an RFC Request may be erdma, which
			// takes Rev 129 only (erdma_recv_mpa_rr): ask in its dialect.
			cfg := o.Config
			cfg.Rev, cfg.PeerToPeer = decode.MPARevERDMA, false
			if e, perr := open(ctx, o, nil, cfg, false); perr == nil {
				e.close()
				return "no Reply to our RFC Request; a Rev 129 Request accepted", Fail, "the target speaks only Alibaba erdma's MPA (Rev 129 with an 8-octet extension, not an RFC revision); rerun with --mpa-rev 129 to test it in its own dialect"
			}
		}
		return "no connection: " + err.Error(), Fail, ""
	}
	defer c.close()
	p := c.ec.Params()
	if p.ERDMA {
		return fmt.Sprintf("Reply Rev 129 (erdma: cookie 0x%08x, congestion control %d)", p.PeerERDMA.Cookie, p.PeerERDMA.CC()), Pass, "Alibaba erdma's MPA, as configured"
	}
	if p.PeerRev != p.Rev {
		return fmt.Sprintf("Reply Rev %d to a Rev %d Request", p.PeerRev, p.Rev), Fail, "a Responder answers with the Request's revision"
	}
	return fmt.Sprintf("Reply Rev %d", p.PeerRev), Pass, ""
}
