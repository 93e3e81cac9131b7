/** The stored body of a target's answer (sealed; never in an event). */
export interface StoredResult {
  readonly status: number | null;
  readonly exitCode: number | null;
  readonly contentType: string | null;
  /** UTF-8 text of the body (or base64 when `encoding` says so). */
  readonly body: string;
  readonly encoding: 'utf8' | 'base64';
  readonly truncated: boolean;
}
