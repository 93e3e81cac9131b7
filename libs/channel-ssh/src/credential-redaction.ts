import type { SshCredential } from './ssh-attempt';

const REDACTED = '[redacted]';
/** Shorter pieces are too likely to occur by chance to be worth hiding. */
const MIN_SECRET_LENGTH = 6;

/**
 * Hides the credential in text the dispatcher returns (reasons, details). ssh2 never quotes a key in its errors;
 * this is the second line of defence. The whole key, each of its lines, and the passphrase are hidden.
 */
export class CredentialRedaction {
  private readonly secrets: readonly string[];

  constructor(credential: SshCredential | undefined) {
    const found = new Set<string>();
    const key = credential?.privateKey ?? '';
    for (const piece of [key, key.trim(), ...key.split(/\r?\n/).map((line) => line.trim()), credential?.passphrase ?? '']) {
      if (piece.length >= MIN_SECRET_LENGTH && !/^-----(BEGIN|END) [A-Z ]+-----$/.test(piece)) found.add(piece);
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
