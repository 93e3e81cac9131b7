/**
 * The domain records and compares intent fingerprints (docs/design.md section 1); computing and parsing them is the
 * fingerprint library's job, so its rules are the only ones.
 */
import { parseFingerprint, type Fingerprint } from '@oncegate/fingerprint';

export type { Fingerprint };

export function isFingerprint(value: unknown): value is Fingerprint {
  try {
    parseFingerprint(value);
    return true;
  } catch {
    return false;
  }
}
