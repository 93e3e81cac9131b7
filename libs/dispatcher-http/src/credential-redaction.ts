import type { HttpCredential } from './http-attempt';

const REDACTED = '[redacted]';
/** Shorter pieces are too likely to occur by chance to be worth hiding (and hiding them would hide noise). */
const MIN_SECRET_LENGTH = 6;

/**
 * Hides credential values in text the dispatcher returns (reasons, details, response header values). Each whole
 * header value is hidden, and so is each of its space-separated parts, so `Bearer abc…` echoed as `abc…` is hidden
 * too.
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
    // Longest first, so a whole value is replaced before its parts.
    this.secrets = [...found].sort((a, b) => b.length - a.length);
  }

  redact(text: string): string {
    let result = text;
    for (const secret of this.secrets) result = result.split(secret).join(REDACTED);
    return result;
  }
}
