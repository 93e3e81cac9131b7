import { argumentsWithDefaults, reservedHeaderReason, scanTemplates } from '@oncegate/contracts';
import type { HttpMethod, HttpRequestTemplate, ToolContract } from '@oncegate/contracts';

/** The request an attempt sends, before the credential and the user agent are added at send time. */
export interface RenderedHttpRequest {
  readonly method: HttpMethod;
  /** Absolute URL as sent: the contract's literal origin, then the rendered path and query (no fragment). */
  readonly url: string;
  /** Contract headers rendered, plus `content-type` for a body and the idempotency header. */
  readonly headers: Record<string, string>;
  /** JSON text, or `undefined` when the request has no body. */
  readonly body: string | undefined;
}

/**
 * A request that cannot be rendered from its contract and arguments. The message names the tool and where
 * (`url`, `headers.X-Name`, `body`), never an argument's value: values may be secret.
 */
export class HttpRenderError extends Error {
  readonly kind = 'http_render' as const;

  constructor(
    readonly tool: string,
    readonly where: string,
    readonly reason: string,
  ) {
    super(`tool '${tool}': ${where}: ${reason}`);
    this.name = 'HttpRenderError';
  }
}

const TEMPLATE = /\{\{.*?\}\}/g;
const ORIGIN = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*)(.*)$/s;
/** Characters allowed as they are in a path or query (RFC 3986 pchar, `/`, `?`, and `%` of an existing escape). */
const URL_SAFE = /[A-Za-z0-9\-._~!$&'()*+,;=:@/?%]/;
const HEADER_VALUE_FORBIDDEN = /[\r\n\0]/;

/** Marks a value whose argument is absent (optional, no default). */
const ABSENT: unique symbol = Symbol('absent');
type Rendered = unknown | typeof ABSENT;

/**
 * Renders the HTTP request of one attempt from the tool's template (docs/contracts.md, "Templates"). Pure.
 *
 * - Input-schema defaults are filled in first, the way the fingerprint fills them, so the request sent and the
 *   intent recorded agree.
 * - URL: a substituted value is percent-encoded (every reserved character, so it can add no path segment or
 *   query parameter); an absent argument renders as the empty string. A path segment an argument leaves empty,
 *   `.` or `..` is refused: the argument would choose a different resource.
 * - Headers: text substitution; a header that refers to an absent argument is left out. A reserved header
 *   (`reservedHeaderReason`: `Host`, framing, hop-by-hop, routing) is refused, so the `Host` sent is always the
 *   URL's authority, the one the credential binding was checked against.
 * - Body: a string that is exactly one template takes the argument's JSON value; other strings are substituted
 *   as text. A field whose template refers to an absent argument is left out (in an array it becomes `null`, so
 *   positions keep their meaning); a body that is only an absent argument means no body.
 * - Text substitution writes strings as they are and any other value as JSON text.
 * - `content-type: application/json` is added to a body unless the contract sets a content type; the
 *   contract's `idempotency_header` is set to the execution id, replacing any same-named header.
 *
 * @throws HttpRenderError when the tool is not an HTTP tool or the request cannot be rendered
 */
export function renderHttpRequest(tool: ToolContract, args: Readonly<Record<string, unknown>>, executionId: string): RenderedHttpRequest {
  const template = tool.request;
  if (template.kind !== 'http') throw new HttpRenderError(tool.name, 'channel', `is '${tool.channel}', not http`);
  const context: RenderContext = { tool: tool.name, args: argumentsWithDefaults(tool, args), executionId };

  const url = renderUrl(context, template.url);
  const headers = renderHeaders(context, template);
  const rendered = template.body === undefined ? ABSENT : renderJson(context, template.body, 'body');
  const body = rendered === ABSENT ? undefined : JSON.stringify(rendered);
  if (body !== undefined && findHeader(headers, 'content-type') === undefined) headers['content-type'] = 'application/json';
  if (template.idempotencyHeader !== null) {
    const reserved = reservedHeaderReason(template.idempotencyHeader);
    if (reserved !== undefined) throw new HttpRenderError(tool.name, 'idempotency_header', reserved);
    setHeader(headers, template.idempotencyHeader, executionId);
  }
  return { method: template.method, url, headers, body };
}

interface RenderContext {
  readonly tool: string;
  readonly args: Readonly<Record<string, unknown>>;
  readonly executionId: string;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}


/** The value one `{{…}}` template refers to, or ABSENT. */
function resolve(context: RenderContext, raw: string, where: string): Rendered {
  const reference = scanTemplates(raw).whole;
  if (reference === undefined) throw new HttpRenderError(context.tool, where, `unknown template '${raw}'`);
  if (reference.kind === 'execution_id') return context.executionId;
  let current: unknown = context.args;
  for (const segment of reference.argument.split('.')) {
    if (!isRecord(current) || current[segment] === undefined) return ABSENT;
    current = current[segment];
  }
  return current;
}

function asText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** Substitutes every template in `text`, each value passed through `encode`; ABSENT when one is absent. */
function interpolate(context: RenderContext, text: string, where: string, encode: (value: string) => string): string | typeof ABSENT {
  let absent = false;
  const result = text.replace(TEMPLATE, (raw) => {
    const value = resolve(context, raw, where);
    if (value === ABSENT) {
      absent = true;
      return '';
    }
    return encode(asText(value));
  });
  return absent ? ABSENT : result;
}

/** `encodeURIComponent` plus the sub-delimiters it leaves alone, so a value is always data, never syntax. */
function encodeComponent(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** Percent-encodes characters of the literal part that may not appear in a request target as they are. */
function encodeLiteral(text: string): string {
  let result = '';
  for (const char of text) result += URL_SAFE.test(char) ? char : encodeURIComponent(char);
  return result;
}

function isDotSegment(segment: string): boolean {
  const decoded = segment.replace(/%2e/gi, '.');
  return decoded === '.' || decoded === '..';
}

function renderUrl(context: RenderContext, urlTemplate: string): string {
  const match = ORIGIN.exec(urlTemplate);
  const originPart = match?.[1];
  if (originPart === undefined || originPart.includes('{{')) {
    throw new HttpRenderError(context.tool, 'url', 'needs a literal http:// or https:// origin');
  }
  let origin: string;
  try {
    const parsed = new URL(originPart);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('scheme');
    origin = parsed.origin;
  } catch {
    throw new HttpRenderError(context.tool, 'url', 'needs a literal http:// or https:// origin');
  }
  // The fragment is never sent.
  const target = (match?.[2] ?? '').split('#')[0] ?? '';
  const queryAt = target.indexOf('?');
  const pathTemplate = queryAt === -1 ? target : target.slice(0, queryAt);
  const queryTemplate = queryAt === -1 ? undefined : target.slice(queryAt + 1);

  // Rendered segment by segment: an encoded value holds no `/`, so segments line up with the template's.
  const segments = pathTemplate.split('/').map((segment, index) => {
    if (!segment.includes('{{')) return encodeLiteral(segment);
    const rendered = renderUrlPart(context, segment);
    if (rendered === '' || isDotSegment(rendered)) {
      throw new HttpRenderError(context.tool, 'url', `an argument would make path segment ${index} ${rendered === '' ? 'empty' : `'${rendered}'`}; refusing to send the request elsewhere`);
    }
    return rendered;
  });
  let path = segments.join('/');
  if (!path.startsWith('/')) path = `/${path}`;
  const query = queryTemplate === undefined ? '' : `?${renderUrlPart(context, queryTemplate)}`;
  return `${origin}${path}${query}`;
}

/** Literal parts made safe, templates percent-encoded, absent arguments empty. */
function renderUrlPart(context: RenderContext, text: string): string {
  let result = '';
  let last = 0;
  for (const found of text.matchAll(TEMPLATE)) {
    result += encodeLiteral(text.slice(last, found.index));
    const value = resolve(context, found[0], 'url');
    result += value === ABSENT ? '' : encodeComponent(asText(value));
    last = found.index + found[0].length;
  }
  return result + encodeLiteral(text.slice(last));
}

function findHeader(headers: Record<string, string>, name: string): string | undefined {
  const lower = name.toLowerCase();
  return Object.keys(headers).find((key) => key.toLowerCase() === lower);
}

/** Sets a header, replacing any with the same name in another case. */
export function setHeader(headers: Record<string, string>, name: string, value: string): void {
  const existing = findHeader(headers, name);
  if (existing !== undefined) delete headers[existing];
  headers[name] = value;
}

function renderHeaders(context: RenderContext, template: HttpRequestTemplate): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, valueTemplate] of Object.entries(template.headers)) {
    const where = `headers.${name}`;
    // The contract checks refuse these; a tool built another way must not route the credential elsewhere either.
    const reserved = reservedHeaderReason(name);
    if (reserved !== undefined) throw new HttpRenderError(context.tool, where, reserved);
    const value = interpolate(context, valueTemplate, where, (text) => text);
    if (value === ABSENT) continue;
    if (HEADER_VALUE_FORBIDDEN.test(value)) throw new HttpRenderError(context.tool, where, 'a substituted value holds a line break or NUL');
    setHeader(headers, name, value);
  }
  return headers;
}

function renderJson(context: RenderContext, value: unknown, where: string): Rendered {
  if (typeof value === 'string') {
    const scan = scanTemplates(value);
    if (scan.whole !== undefined) return resolve(context, value.trim(), where);
    if (scan.references.length === 0 && scan.problems.length === 0) return value;
    return interpolate(context, value, where, (text) => text);
  }
  if (Array.isArray(value)) {
    return value.map((item, index) => {
      const rendered = renderJson(context, item, `${where}[${index}]`);
      return rendered === ABSENT ? null : rendered;
    });
  }
  if (isRecord(value)) {
    const result: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      const rendered = renderJson(context, item, `${where}.${key}`);
      if (rendered !== ABSENT) result[key] = rendered;
    }
    return result;
  }
  return value;
}
