/**
 * The most a transcript event's `data` may take, as UTF-8 JSON. Every surface reads transcripts (the API,
 * event streams, the session page, the notifier), so the bound is applied where events are stored and
 * holds for all of them: a command that prints 75 MB leaves a readable beginning and end, not 75 MB.
 */
export const EVENT_DATA_MAX_BYTES = 64 * 1024;

const MARKER_RESERVE = 64;

/**
 * `data` as it is stored, with its JSON. Within the cap it is unchanged. Over it, its long strings (such as
 * a tool result's `output` or a message's `text`) keep their beginning and end around a note of what was
 * cut, and the event says `truncated: true` with `original_bytes`, the size of the JSON it was given. When
 * even that cannot fit (thousands of small values), only `truncated`, `original_bytes` and the beginning
 * of the original JSON as `text` remain.
 */
export function capEventData(
  data: Record<string, unknown>,
  maxBytes = EVENT_DATA_MAX_BYTES,
): { data: Record<string, unknown>; json: string } {
  const json = JSON.stringify(data);
  // A UTF-8 character takes at most 3 bytes per UTF-16 unit: short JSON is certainly within the cap.
  if (json.length * 3 <= maxBytes) return { data, json };
  const originalBytes = Buffer.byteLength(json);
  if (originalBytes <= maxBytes) return { data, json };

  const marked = (limit: number) => ({
    ...(cutStrings(data, limit) as Record<string, unknown>),
    truncated: true,
    original_bytes: originalBytes,
  });
  // The longest per-string length that fits: a string of `limit` units takes at least `limit` bytes.
  let low = Buffer.byteLength(JSON.stringify(marked(0))) <= maxBytes ? 0 : maxBytes + 1;
  let high = maxBytes;
  let best: { data: Record<string, unknown>; json: string } | undefined;
  while (low <= high) {
    const limit = Math.floor((low + high) / 2);
    const candidate = marked(limit);
    const candidateJson = JSON.stringify(candidate);
    if (Buffer.byteLength(candidateJson) <= maxBytes) {
      best = { data: candidate, json: candidateJson };
      low = limit + 1;
    } else {
      high = limit - 1;
    }
  }
  if (best) return best;
  const fallback = {
    truncated: true,
    original_bytes: originalBytes,
    text: `${utf8Prefix(json, maxBytes - MARKER_RESERVE * 2)}\n[truncated by Dispatch: ${originalBytes} bytes]`,
  };
  return { data: fallback, json: JSON.stringify(fallback) };
}

/** `value` with every string longer than `limit` code units (and the note) cut to its beginning and end around a note. */
function cutStrings(value: unknown, limit: number): unknown {
  if (typeof value === "string") {
    return value.length > limit + MARKER_RESERVE ? cutString(value, limit) : value;
  }
  if (Array.isArray(value)) return value.map((item) => cutStrings(item, limit));
  if (value !== null && typeof value === "object") {
    // fromEntries defines own properties: a "__proto__" key stays data, it does not become a prototype.
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, cutStrings(item, limit)]));
  }
  return value;
}

function cutString(text: string, limit: number): string {
  const head = safeEnd(text, Math.ceil(limit / 2));
  const tail = safeStart(text, text.length - Math.floor(limit / 2));
  const cut = tail - head;
  return `${text.slice(0, head)}\n[truncated by Dispatch: ${cut} of ${text.length} characters cut]\n${text.slice(tail)}`;
}

/** `end`, moved back so that a slice ending there does not split a surrogate pair. */
function safeEnd(text: string, end: number): number {
  const code = text.charCodeAt(end - 1);
  return end > 0 && code >= 0xd800 && code <= 0xdbff ? end - 1 : end;
}

/** `start`, moved on so that a slice starting there does not split a surrogate pair. */
function safeStart(text: string, start: number): number {
  const code = text.charCodeAt(start);
  return start < text.length && code >= 0xdc00 && code <= 0xdfff ? start + 1 : start;
}

function utf8Prefix(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text.slice(0, maxBytes), "utf8");
  if (bytes.length <= maxBytes) return text.slice(0, maxBytes);
  // Decoding a cut multi-byte character yields U+FFFD; drop it.
  return bytes
    .subarray(0, maxBytes)
    .toString("utf8")
    .replace(/\uFFFD$/, "");
}
