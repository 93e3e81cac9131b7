import type { OpenAPIV3, OpenAPIV3_1 } from 'openapi-types';
import { parse as parseYaml } from 'yaml';
import { OpenApiDocumentError } from './import-errors';

export type OpenApiVersion = '3.0' | '3.1';

/** An OpenAPI document as the import reads it: validated, then dereferenced. */
export interface OpenApiDocument {
  /** Where it came from, as messages and the written file show it (a URL without user info or query). */
  readonly source: string;
  /** `3.0` or `3.1`: how its schemas are read. */
  readonly version: OpenApiVersion;
  /** The document's own `openapi` field, e.g. `3.1.0`. */
  readonly openapi: string;
  /**
   * Every `$ref` replaced by what it points to, except those that point back into themselves (a tree of nodes):
   * those stay `{ $ref: '#/…' }` into this document, and the schema conversion names them.
   */
  readonly document: OpenAPIV3.Document | OpenAPIV3_1.Document;
  /** The URL the document was fetched from: a relative server URL is relative to it. `undefined` for a file. */
  readonly baseUrl: string | undefined;
}

export interface ReadDocumentOptions {
  /** For a URL: the fetch to use (default: the global one). */
  readonly fetch?: typeof fetch;
  /** For a URL: how long the download may take, in milliseconds. Default 30 000. */
  readonly timeoutMs?: number;
  /** For a URL: the largest document accepted, in bytes. Default 32 MiB. */
  readonly maxBytes?: number;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_BYTES = 32 * 1024 * 1024;

type Parser = typeof import('@readme/openapi-parser');

/** True when `location` is an http(s) URL rather than a file path. */
export function isUrl(location: string): boolean {
  return /^https?:\/\//i.test(location);
}

/**
 * `location` as messages show it: a file path as given; a URL without its user info, and with its query replaced by
 * `?…` (either may hold a token that gives access to the document).
 */
export function displaySource(location: string): string {
  if (!isUrl(location)) return location;
  try {
    const url = new URL(location);
    return `${url.protocol}//${url.host}${url.pathname}${url.search === '' ? '' : '?…'}`;
  } catch {
    return 'the URL given';
  }
}

/**
 * Reads an OpenAPI 3.0 or 3.1 document (JSON or YAML) from a file or an http(s) URL, validates it with
 * @readme/openapi-parser, then dereferences it.
 *
 * A file is read by the parser itself, so `$ref`s to other files resolve relative to it. A URL is fetched here, not
 * by the parser: the parser refuses loopback and private addresses, where an organisation's own API descriptions
 * are often served; its `$ref`s into other files are not followed (the error says to import the downloaded file).
 *
 * @throws OpenApiDocumentError naming each problem and where it is
 */
export async function readOpenApiDocument(location: string, options: ReadDocumentOptions = {}): Promise<OpenApiDocument> {
  const source = displaySource(location);
  // Loaded on use: the parser and its validators are large, and every other command of the CLI does without them.
  const parser: Parser = await import('@readme/openapi-parser');
  if (isUrl(location)) {
    const text = await download(location, source, options);
    let raw: unknown;
    try {
      raw = parseYaml(text);
    } catch (error) {
      throw new OpenApiDocumentError(source, [`neither JSON nor YAML: ${messageOf(error)}`]);
    }
    const openapi = versionOf(raw, source);
    const parserOptions = { resolve: { external: false } };
    await validateWith(parser, structuredClone(raw) as never, source, parserOptions);
    const document = await parsing(source, () => parser.dereference(raw as never, { ...parserOptions, dereference: { circular: 'ignore' } }));
    const external = externalReferences(document);
    if (external.length > 0) {
      throw new OpenApiDocumentError(source, [
        `it refers to other files (${external.slice(0, 3).join(', ')}${external.length > 3 ? ', …' : ''}), which are not fetched for a document read from a URL: download the document with the files it refers to and import the file`,
      ]);
    }
    return { source, version: openapi.startsWith('3.0') ? '3.0' : '3.1', openapi, document: document as OpenApiDocument['document'], baseUrl: location };
  }
  const raw = await parsing(source, () => parser.parse(location));
  const openapi = versionOf(raw, source);
  await validateWith(parser, location, source, {});
  const document = await parsing(source, () => parser.dereference(location, { dereference: { circular: 'ignore' } }));
  return { source, version: openapi.startsWith('3.0') ? '3.0' : '3.1', openapi, document: document as OpenApiDocument['document'], baseUrl: undefined };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Runs one parser step; whatever it throws (a file that cannot be read, YAML that does not parse) is the document's problem. */
async function parsing<T>(source: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    throw new OpenApiDocumentError(source, [messageOf(error)]);
  }
}

/** The `openapi` field of a 3.0 or 3.1 document; anything else is refused with what it is. */
function versionOf(raw: unknown, source: string): string {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new OpenApiDocumentError(source, ['not an OpenAPI document: its top level is not a mapping']);
  const record = raw as Record<string, unknown>;
  if (record['swagger'] !== undefined) {
    throw new OpenApiDocumentError(source, [`a Swagger ${String(record['swagger'])} document; the import reads OpenAPI 3.0 and 3.1 (convert it first, e.g. with swagger2openapi)`]);
  }
  const openapi = record['openapi'];
  if (typeof openapi !== 'string') throw new OpenApiDocumentError(source, ["not an OpenAPI document: it has no 'openapi' field naming its version"]);
  if (!/^3\.[01]\.\d+/.test(openapi)) throw new OpenApiDocumentError(source, [`OpenAPI ${openapi}; the import reads OpenAPI 3.0 and 3.1`]);
  return openapi;
}

async function validateWith(parser: Parser, api: string | object, source: string, options: object): Promise<void> {
  const result = await parsing(source, () => parser.validate(api as never, options));
  if (result.valid) return;
  const problems = result.errors.map((error) => error.message.trim());
  if (result.additionalErrors > 0) problems.push(`and ${result.additionalErrors} more`);
  // The validator's excerpts are of the document as JSON: say so, or their line numbers mislead a YAML reader.
  if (problems.some((problem) => problem.includes('\n'))) problems.push('(the excerpts show the document as JSON, its $refs resolved)');
  throw new OpenApiDocumentError(source, ['not a valid OpenAPI document:', ...problems]);
}

/** `$ref`s left pointing into other files: with external resolution off, the parser leaves them in place. */
function externalReferences(document: unknown): string[] {
  const found = new Set<string>();
  const seen = new Set<object>();
  const walk = (value: unknown): void => {
    if (typeof value !== 'object' || value === null || seen.has(value)) return;
    seen.add(value);
    const ref = (value as { $ref?: unknown }).$ref;
    if (typeof ref === 'string' && !ref.startsWith('#')) found.add(ref);
    for (const child of Object.values(value)) walk(child);
  };
  walk(document);
  return [...found];
}

async function download(location: string, source: string, options: ReadDocumentOptions): Promise<string> {
  const url = new URL(location);
  if (url.username !== '' || url.password !== '') {
    throw new OpenApiDocumentError(source, ['the URL holds a user name or password; the import sends no credentials: download the document yourself and import the file']);
  }
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  let response: Response;
  try {
    response = await (options.fetch ?? fetch)(url, {
      headers: { accept: 'application/yaml, application/json;q=0.9, */*;q=0.5' },
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    throw new OpenApiDocumentError(source, [`cannot be fetched: ${fetchFailure(error, timeoutMs)}`]);
  }
  if (!response.ok) {
    await response.body?.cancel().catch(() => undefined);
    throw new OpenApiDocumentError(source, [`cannot be fetched: the server answered HTTP ${response.status}`]);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for await (const chunk of response.body ?? []) {
      size += chunk.byteLength;
      if (size > maxBytes) {
        await response.body?.cancel().catch(() => undefined);
        throw new OpenApiDocumentError(source, [`larger than ${Math.round(maxBytes / 1024 / 1024)} MiB; not read`]);
      }
      chunks.push(chunk);
    }
  } catch (error) {
    if (error instanceof OpenApiDocumentError) throw error;
    throw new OpenApiDocumentError(source, [`cannot be fetched: ${fetchFailure(error, timeoutMs)}`]);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Why a fetch failed, from undici's cause (`connect ECONNREFUSED 127.0.0.1:9`) rather than its bare `fetch failed`. */
function fetchFailure(error: unknown, timeoutMs: number): string {
  if (error instanceof DOMException && (error.name === 'TimeoutError' || error.name === 'AbortError')) return `no answer within ${timeoutMs / 1000} s`;
  const cause = (error as { cause?: unknown }).cause;
  return cause instanceof Error ? cause.message : messageOf(error);
}
