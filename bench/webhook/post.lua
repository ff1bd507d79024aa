-- bench/webhook/post.lua — wrk script: POST one AdmissionReview per request.
--   NW_BENCH_BODY      file with the request body
--   NW_BENCH_DELAY_MS  per-connection delay between requests (pacing; 0 = flat out)
-- Prints one machine-readable line at the end:
--   NWBENCH rps=<req/s> p50=<ms> p99=<ms> p999=<ms> errors=<n> requests=<n>
-- errors counts socket errors, timeouts and non-2xx/3xx answers alike.
local f = assert(io.open(os.getenv("NW_BENCH_BODY"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"

local d = tonumber(os.getenv("NW_BENCH_DELAY_MS") or "0")
if d > 0 then
  function delay()
    return d
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("NWBENCH rps=%.1f p50=%.3f p99=%.3f p999=%.3f errors=%d requests=%d\n",
    summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency:percentile(99.9) / 1000,
    e.connect + e.read + e.write + e.status + e.timeout, summary.requests))
end
