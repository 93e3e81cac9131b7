import type { HttpCredential, HttpCredentialBuffer } from './http-attempt';

const REDACTED = Buffer.from('[redacted]', 'utf8');
/** Shorter pieces are too likely to occur by chance to be worth hiding (and hiding them would hide noise). */
const MIN_SECRET_LENGTH = 6;

/**
 * Hides credential values in what the dispatcher returns (reasons, details, response header values and response
 * bodies: a target that echoes the credential must not hand it to the agent). Each whole header value is
 * hidden, and so is each of its space-separated parts, so `Bearer abc…` echoed as `abc…` is hidden too, and so
 * is every raw secret the credential names.
 *
 * Only whole values are hidden, never a piece that merely looks like the start of one: hiding a matching prefix
 * would tell an agent that controls echoed text whether its guess starts the secret. So a body is hidden before
 * it is cut, on bytes read past the cut (`lookahead`), and the cut falls in hidden text, not in the secret.
 */
export class CredentialRedaction {
  /** Longest first, so at one position a whole value is replaced before its parts. */
  private secrets: readonly Buffer[];
  /**
   * How many bytes past a position a secret starting there can reach (the longest secret's length less one):
   * a stream read this far past a cut holds every secret that straddles the cut whole.
   */
  readonly lookahead: number;

  constructor(credential: HttpCredential | HttpCredentialBuffer | undefined) {
    const secrets = credential !== undefined && 'value' in credential ? piecesOfBytes(credential) : piecesOfText(credential);
    this.secrets = secrets.sort((a, b) => b.length - a.length);
    this.lookahead = Math.max(0, (this.secrets[0]?.length ?? 0) - 1);
  }

  /** Zero-fills this redaction's copies of the secrets; it hides nothing afterwards. */
  wipe(): void {
    for (const secret of this.secrets) secret.fill(0);
    this.secrets = [];
  }

  redact(text: string): string {
    if (this.secrets.length === 0) return text;
    return Buffer.from(this.redactBytes(Buffer.from(text, 'utf8'), true)).toString('utf8');
  }

  /**
   * `bytes` with every secret hidden; the same bytes when they hold none and are `complete`. When more of the
   * stream follows (`complete` false: cut at a cap, or the connection lost), the last `lookahead` bytes may be the
   * start of a secret whose rest was not read: they are withheld, except where a whole secret starting before them
   * is hidden.
   */
  redactBytes(bytes: Uint8Array, complete: boolean): Uint8Array {
    const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const end = complete ? buffer.length : Math.max(0, buffer.length - this.lookahead);
    const matches = this.matchesBefore(buffer, end);
    if (matches.length === 0) return complete ? bytes : new Uint8Array(buffer.subarray(0, end));
    const parts: Buffer[] = [];
    let position = 0;
    for (const [start, length] of matches) {
      parts.push(buffer.subarray(position, start), REDACTED);
      position = start + length;
    }
    if (position < end) parts.push(buffer.subarray(position, end));
    return new Uint8Array(Buffer.concat(parts));
  }

  /** `[start, length]` of each secret to hide that starts before `end`, left to right, longest at a position, none overlapping. */
  private matchesBefore(buffer: Buffer, end: number): [number, number][] {
    const found: [number, number][] = [];
    for (const secret of this.secrets) {
      for (let at = buffer.indexOf(secret); at !== -1 && at < end; at = buffer.indexOf(secret, at + 1)) found.push([at, secret.length]);
    }
    found.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
    const kept: [number, number][] = [];
    let free = 0;
    for (const match of found) {
      if (match[0] < free) continue;
      kept.push(match);
      free = match[0] + match[1];
    }
    return kept;
  }
}

function piecesOfText(credential: HttpCredential | undefined): Buffer[] {
  const found = new Set<string>();
  for (const value of Object.values(credential?.headers ?? {})) {
    for (const piece of [value, ...value.split(/\s+/)]) {
      if (piece.length >= MIN_SECRET_LENGTH) found.add(piece);
    }
  }
  for (const secret of credential?.secrets ?? []) {
    if (secret.length >= MIN_SECRET_LENGTH) found.add(secret);
  }
  return [...found].map((secret) => Buffer.from(secret, 'utf8'));
}

/** The same pieces as `piecesOfText` (the whole value, its parts between white space, each secret), as copied bytes, with no string made. */
function piecesOfBytes(credential: HttpCredentialBuffer): Buffer[] {
  const pieces: Buffer[] = [credential.value];
  let start = 0;
  for (let at = 0; at <= credential.value.length; at += 1) {
    if (at === credential.value.length || isWhiteSpace(credential.value[at]!)) {
      if (at > start) pieces.push(credential.value.subarray(start, at));
      start = at + 1;
    }
  }
  pieces.push(...credential.secrets);
  const kept: Buffer[] = [];
  for (const piece of pieces) {
    if (piece.length >= MIN_SECRET_LENGTH && !kept.some((other) => other.equals(piece))) kept.push(Buffer.from(piece));
  }
  return kept;
}

/** ASCII white space, as `\s` splits a header value (a header value holds no other). */
function isWhiteSpace(byte: number): boolean {
  return byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0b || byte === 0x0c || byte === 0x0d;
}
