/**
 * Lines of a text read in chunks (a file stream, stdin), without `node:readline`: the same lines readline
 * yields with `crlfDelay: Infinity` — a line ends at `\n`, `\r\n` or a lone `\r`, a final line without a
 * newline is yielded, and a newline at the very end adds no empty line — several times cheaper per line.
 * Byte chunks are decoded as UTF-8 (a character split between chunks is joined; invalid bytes become U+FFFD,
 * as readline's decoder does).
 */
export async function* splitLines(chunks: AsyncIterable<string | Uint8Array>): AsyncGenerator<string, void, undefined> {
  const decoder = new TextDecoder('utf-8');
  let rest = '';
  /** The previous chunk ended with '\r': a '\n' starting this one belongs to that line break. */
  let afterCr = false;
  for await (const chunk of chunks) {
    let text = typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    if (text.length === 0) continue;
    if (afterCr && text.charCodeAt(0) === 0x0a) text = text.slice(1);
    afterCr = false;
    if (text.indexOf('\r') === -1) {
      // The common case: '\n' only.
      let start = 0;
      for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', start)) {
        const line = start === 0 && rest.length > 0 ? rest + text.slice(0, end) : text.slice(start, end);
        if (start === 0) rest = '';
        yield line;
        start = end + 1;
      }
      rest = start === 0 ? rest + text : text.slice(start);
      continue;
    }
    const breaks = /\r\n|\n|\r/g;
    let start = 0;
    for (let match = breaks.exec(text); match !== null; match = breaks.exec(text)) {
      const line = start === 0 ? rest + text.slice(0, match.index) : text.slice(start, match.index);
      if (start === 0) rest = '';
      start = match.index + match[0].length;
      yield line;
    }
    rest = start === 0 ? rest + text : text.slice(start);
    // A chunk ending in '\r' may be the first half of '\r\n'.
    afterCr = text.charCodeAt(text.length - 1) === 0x0d;
  }
  const tail = rest + decoder.decode();
  if (tail.length > 0) yield tail;
}
