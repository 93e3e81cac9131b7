import type { HttpCredential } from './http-attempt';

const REDACTED = '[redacted]';
/** Shorter pieces are too likely to occur by chance to be worth hiding (and hiding them would hide noise). */
const MIN_SECRET_LENGTH = 6;

/**
 * Hides credential values in what the dispatcher returns (reasons, details, response header values and response
 * bodies: a target that echoes the credential must not hand it to the agent). Each whole header value is
 * hidden, and so is each of its space-separated parts, so `Bearer abc…` echoed as `abc…` is hidden too, and so
 * is every raw secret the credential names.
 */
export class CredentialRedaction {
  private readonly secrets: readonly string[];

  constructor(credential: HttpCredential | undefined) {
    const found = new Set<string>();
    for (const value of Object.values(credential?.headers ?? {})) {
      for (const piece of [value, ...value.split(/\s+/)]) {
        if (piece.length >= MIN_SECRET_LENGTH) found.add(piece);
      }
    }
    for (const secret of credential?.secrets ?? []) {
      if (secret.length >= MIN_SECRET_LENGTH) found.add(secret);
    }
    // Longest first, so a whole value is replaced before its parts.
    this.secrets = [...found].sort((a, b) => b.length - a.length);
  }

  redact(text: string): string {
    let result = text;
    for (const secret of this.secrets) result = result.split(secret).join(REDACTED);
    return result;
  }

  /** A response body with every secret hidden; the same bytes when it holds none. */
  redactBody(body: Uint8Array): Uint8Array {
    const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
    if (!this.secrets.some((secret) => bytes.includes(secret))) return body;
    return new Uint8Array(Buffer.from(this.redact(bytes.toString('utf8')), 'utf8'));
  }
}
