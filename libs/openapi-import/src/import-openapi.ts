import { CREDENTIAL_HEADERS, CREDENTIAL_REF_RULE, checkContractFile, closestMatch, isCredentialName, isCredentialRef, reservedHeaderReason } from '@oncegate/contracts';
import { contractFileText } from './contract-yaml';
import { CredentialOptionError, ServerUrlError, UnknownSelectionError } from './import-errors';
import { SchemaConverter } from './json-schema-conversion';
import { nameOf, renamedBecause, toolNames, UniqueNames, wantedToolName } from './names';
import type { OpenApiDocument } from './openapi-document';
import { credentialRefOf, operationSecurity, type MappedCredentialKind, type MappedScheme, type SecurityRequirement, type SecuritySchemeObject } from './security-mapping';
import { bindingOf, documentServer, serverOption, type ServerObject } from './server-url';

export interface ImportOptions {
  /** Only operations with one of these tags (with `operations`: those as well). */
  readonly tags?: readonly string[];
  /** Only these operationIds (with `tags`: those as well). */
  readonly operations?: readonly string[];
  /** The URL requests go to, instead of the document's servers. */
  readonly server?: string;
  /** The credential reference every mapped security scheme becomes, instead of one named after each scheme. */
  readonly credential?: string;
}

/** The operation classes an import writes: a conditional write needs a status query the document cannot say. */
export type ImportedClass = 'read_only' | 'idempotent_write' | 'irreversible';

export interface OperationRef {
  /** Upper case: `GET`. */
  readonly method: string;
  readonly path: string;
  readonly operationId: string | undefined;
}

export interface ImportedTool {
  readonly operation: OperationRef;
  readonly name: string;
  readonly operationClass: ImportedClass;
  /** The tool as the contract file holds it, fields in the file's order. */
  readonly contract: Readonly<Record<string, unknown>>;
  /** What of the operation was not mapped, or was mapped in a way to know about; written as comments at the tool. */
  readonly notes: readonly string[];
}

/** An operation no tool was made of, and why: what it needs cannot be said in a contract. */
export interface SkippedOperation {
  readonly operation: OperationRef;
  readonly reasons: readonly string[];
}

/** A credential the imported tools name, and the command that stores it in the vault. */
export interface CredentialSetup {
  readonly ref: string;
  readonly kind: MappedCredentialKind;
  readonly header: string | undefined;
  /** The security schemes it stands for. */
  readonly schemes: readonly string[];
  /** `host[:port]` of the servers of the tools that name it. */
  readonly bindings: readonly string[];
  readonly tools: readonly string[];
  /** `oncegate vault set <ref> --kind … --bind …` (the value then comes on standard input, or --from-env/--from-file). */
  readonly command: string;
}

export interface OpenApiImport {
  readonly source: string;
  /** The document's `openapi` field. */
  readonly openapi: string;
  /** `info.title` and `info.version`. */
  readonly title: string;
  readonly apiVersion: string;
  readonly tools: readonly ImportedTool[];
  readonly skipped: readonly SkippedOperation[];
  /** What of the document as a whole was not mapped (webhooks, other servers). */
  readonly notes: readonly string[];
  readonly credentials: readonly CredentialSetup[];
}

/** The Path Item fields that are operations, in the order OpenAPI lists them. */
const OPERATION_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const CONTRACT_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']);
/** How long a retry still matches, by class: a read is cheap to repeat; an irreversible effect is matched for a day. */
const CORRELATION_WINDOWS: Readonly<Record<ImportedClass, string>> = { read_only: '30s', idempotent_write: '5m', irreversible: '1d' };
/** A contract's header names (`tools.schema.json`). */
const HEADER_NAME = /^[A-Za-z0-9-]+$/;

type Json = Record<string, unknown>;

interface ParameterObject {
  readonly name: string;
  readonly in: string;
  readonly required?: boolean;
  readonly description?: string;
  readonly deprecated?: boolean;
  readonly style?: string;
  readonly explode?: boolean;
  readonly schema?: unknown;
  readonly content?: unknown;
  readonly example?: unknown;
}

interface MediaTypeObject {
  readonly schema?: unknown;
}

interface OperationObject {
  readonly operationId?: string;
  readonly summary?: string;
  readonly description?: string;
  readonly tags?: readonly string[];
  readonly deprecated?: boolean;
  readonly parameters?: readonly ParameterObject[];
  readonly requestBody?: { readonly required?: boolean; readonly description?: string; readonly content?: Readonly<Record<string, MediaTypeObject>> };
  readonly callbacks?: Readonly<Record<string, unknown>>;
  readonly security?: readonly SecurityRequirement[];
  readonly servers?: readonly ServerObject[];
}

interface PathItemObject {
  readonly parameters?: readonly ParameterObject[];
  readonly servers?: readonly ServerObject[];
}

interface Located {
  readonly ref: OperationRef;
  readonly item: PathItemObject;
  readonly operation: OperationObject;
}

/** One argument made of a parameter. */
interface ParameterArgument {
  readonly parameter: ParameterObject;
  name: string;
}

/** Everything of one operation's tool but its name and credential. */
interface ToolDraft {
  readonly located: Located;
  readonly operationClass: ImportedClass;
  readonly server: string;
  readonly security: MappedScheme | undefined;
  readonly build: (name: string, credentialRef: string | undefined) => Json;
  readonly notes: string[];
}

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function where(parameter: ParameterObject): string {
  return `${parameter.in} parameter '${parameter.name}'`;
}

/**
 * Maps the operations of a validated, dereferenced OpenAPI document to tool contracts (docs/contracts.md,
 * "Importing from OpenAPI"). Pure: the document was read by `readOpenApiDocument`. Every tool it returns passed
 * the contract file's own check; an operation whose tool would not is among `skipped`, with the check's reasons.
 *
 * @throws UnknownSelectionError for a tag or operationId the document does not have
 * @throws ServerUrlError when there is no absolute server URL to send to
 * @throws CredentialOptionError when `credential` is not a reference, or cannot stand for the schemes used
 */
export function importOpenApi(read: OpenApiDocument, options: ImportOptions = {}): OpenApiImport {
  const document = read.document as unknown as Json;
  const server = options.server === undefined ? undefined : serverOption(options.server);
  if (options.credential !== undefined && !isCredentialRef(options.credential)) throw new CredentialOptionError(`--credential ${CREDENTIAL_REF_RULE}`);

  const all = operationsOf(document);
  const selected = select(all, document, options);
  const notes = documentNotes(document, server);
  const schemes = (isRecord(document['components']) && isRecord(document['components']['securitySchemes']) ? document['components']['securitySchemes'] : {}) as Record<string, SecuritySchemeObject>;
  const documentServers = (Array.isArray(document['servers']) ? document['servers'] : []) as ServerObject[];

  const drafts: ToolDraft[] = [];
  const skipped: SkippedOperation[] = [];
  for (const located of selected) {
    const draft = draftTool(located, read, document, { server, documentServers, schemes });
    if ('reasons' in draft) skipped.push(draft);
    else drafts.push(draft);
  }

  const refs = credentialRefs(drafts, options.credential);
  if (options.credential !== undefined && refs.size === 0) {
    notes.push(`--credential ${options.credential} is named by no tool: none of the operations imported has a security scheme the vault can hold`);
  }
  const names = toolNames();
  const tools: ImportedTool[] = [];
  for (const draft of drafts) {
    const { ref: operation } = draft.located;
    const wanted = wantedToolName(operation.method, operation.path, operation.operationId);
    const why = operation.operationId === undefined ? undefined : renamedBecause(operation.operationId, names);
    const name = names.claim(wanted);
    if (operation.operationId !== undefined && name !== operation.operationId) draft.notes.unshift(`tool name '${name}': operationId '${operation.operationId}' ${why}`);
    const contract = draft.build(name, draft.security === undefined ? undefined : refs.get(draft.security.scheme));
    // Checked as `contracts check` will check the file: a tool that would not pass is reported, never written.
    const checked = checkContractFile(contractFileText([{ contract, notes: [] }]), `${name}.yaml`);
    if (!checked.ok) {
      skipped.push({ operation, reasons: checked.issues.map((issue) => `${issue.path.replace(/^tools\[0\]\.?/, '') || 'tool'}: ${issue.reason}`) });
      continue;
    }
    tools.push({ operation, name, operationClass: draft.operationClass, contract, notes: draft.notes });
  }

  const info = isRecord(document['info']) ? document['info'] : {};
  return {
    source: read.source,
    openapi: read.openapi,
    title: String(info['title'] ?? ''),
    apiVersion: String(info['version'] ?? ''),
    tools,
    skipped,
    notes,
    credentials: credentialSetups(tools, drafts, refs),
  };
}

function operationsOf(document: Json): Located[] {
  const paths = isRecord(document['paths']) ? document['paths'] : {};
  const found: Located[] = [];
  for (const [path, item] of Object.entries(paths)) {
    if (!isRecord(item)) continue;
    for (const method of OPERATION_METHODS) {
      const operation = item[method];
      if (!isRecord(operation)) continue;
      const operationId = typeof operation['operationId'] === 'string' ? operation['operationId'] : undefined;
      found.push({ ref: { method: method.toUpperCase(), path, operationId }, item: item as PathItemObject, operation: operation as OperationObject });
    }
  }
  return found;
}

/** The operations `--tag` and `--operation` name (all without either); an unknown name is an error listing the known ones. */
function select(all: readonly Located[], document: Json, options: ImportOptions): Located[] {
  const tags = options.tags ?? [];
  const operations = options.operations ?? [];
  if (tags.length === 0 && operations.length === 0) return [...all];
  const knownTags = [...new Set([...(Array.isArray(document['tags']) ? document['tags'] : []).map((tag) => String((tag as Json)['name'])), ...all.flatMap((op) => op.operation.tags ?? [])])];
  const knownIds = all.flatMap((op) => (op.ref.operationId === undefined ? [] : [op.ref.operationId]));
  const refuse = (what: 'tag' | 'operationId', asked: readonly string[], known: readonly string[]) => {
    const unknown = asked.filter((name) => !known.includes(name));
    if (unknown.length === 0) return;
    const suggestions = new Map(unknown.flatMap((name) => {
      const close = closestMatch(name, known);
      return close === undefined ? [] : [[name, close] as const];
    }));
    throw new UnknownSelectionError(what, unknown, known, suggestions);
  };
  refuse('tag', tags, knownTags);
  refuse('operationId', operations, knownIds);
  return all.filter((op) => (op.operation.tags ?? []).some((tag) => tags.includes(tag)) || (op.ref.operationId !== undefined && operations.includes(op.ref.operationId)));
}

function documentNotes(document: Json, server: string | undefined): string[] {
  const notes: string[] = [];
  const servers = Array.isArray(document['servers']) ? (document['servers'] as ServerObject[]) : [];
  if (server === undefined && servers.length > 1) {
    notes.push(`servers: the first, ${servers[0]!.url}, is used; ignored: ${servers.slice(1).map((s) => s.url).join(', ')} (--server chooses another)`);
  }
  if (isRecord(document['webhooks']) && Object.keys(document['webhooks']).length > 0) {
    notes.push(`webhooks (${Object.keys(document['webhooks']).join(', ')}) are not mapped: the gateway makes calls, it does not receive them`);
  }
  return notes;
}

/** Path-level parameters, replaced by an operation's own of the same name and location (OpenAPI's rule). */
function parametersOf(located: Located): ParameterObject[] {
  const own = located.operation.parameters ?? [];
  const inherited = (located.item.parameters ?? []).filter((p) => !own.some((o) => o.name === p.name && o.in === p.in));
  return [...inherited, ...own].filter((p) => isRecord(p) && typeof p.name === 'string');
}

/** The types a schema's values can have, as far as its `type`, `enum`, `const` and compositions say. */
function valueTypes(schema: unknown, seen = new Set<unknown>()): Set<string> {
  const types = new Set<string>();
  if (!isRecord(schema) || seen.has(schema)) return types;
  seen.add(schema);
  const type = schema['type'];
  for (const t of Array.isArray(type) ? type : type === undefined ? [] : [type]) types.add(String(t));
  if (schema['properties'] !== undefined) types.add('object');
  if (schema['items'] !== undefined) types.add('array');
  for (const value of [...(Array.isArray(schema['enum']) ? schema['enum'] : []), ...('const' in schema ? [schema['const']] : [])]) {
    types.add(Array.isArray(value) ? 'array' : value === null ? 'null' : typeof value);
  }
  for (const keyword of ['allOf', 'anyOf', 'oneOf']) {
    const list = schema[keyword];
    if (Array.isArray(list)) for (const item of list) for (const t of valueTypes(item, seen)) types.add(t);
  }
  return types;
}

/** Why a parameter's serialisation cannot be written by a contract (one value, as text), or `undefined` when it can. */
function serialisationProblem(parameter: ParameterObject): string | undefined {
  if (parameter.content !== undefined) return 'it is described by `content` (a serialised media type), which a contract does not write into a URL or header';
  const defaultStyle = parameter.in === 'query' ? 'form' : 'simple';
  const style = parameter.style ?? defaultStyle;
  if (style !== defaultStyle) return `style '${style}' is not expressed by a contract, which writes one value as it is`;
  const types = valueTypes(parameter.schema);
  if (types.has('array') || types.has('object')) {
    return `it is ${types.has('array') ? 'an array' : 'an object'}: a contract writes one value in the ${parameter.in === 'header' ? 'header' : parameter.in}, not a list or pairs`;
  }
  return undefined;
}

/** `application/json`, `application/merge-patch+json`, `application/json; charset=utf-8`. */
function isJsonMediaType(mediaType: string): boolean {
  return /^application\/([A-Za-z0-9.!#$&^_-]+\+)?json$/i.test(mediaType.split(';')[0]!.trim());
}

/** A URL's literal path characters as they may stand in a request target; `%` escapes already there are kept. */
function encodePathLiteral(text: string): string {
  return text.replace(/[^A-Za-z0-9\-._~!$&'()*+,;=:@/%]/g, (char) => encodeURIComponent(char));
}

function draftTool(
  located: Located,
  read: OpenApiDocument,
  document: Json,
  context: { server: string | undefined; documentServers: readonly ServerObject[]; schemes: Readonly<Record<string, SecuritySchemeObject>> },
): ToolDraft | SkippedOperation {
  const { ref, operation, item } = located;
  const notes: string[] = [];
  const blockers: string[] = [];
  if (!CONTRACT_METHODS.has(ref.method)) {
    return { operation: ref, reasons: [`${ref.method} is not a method a contract sends (GET, HEAD, POST, PUT, PATCH, DELETE)`] };
  }

  // Where the requests go: --server, else the operation's, the path's, then the document's first server.
  let server = context.server;
  if (server === undefined) {
    const [list, level] = operation.servers?.length ? [operation.servers, 'operation'] : item.servers?.length ? [item.servers, 'path'] : [context.documentServers, 'document'];
    const first = list[0];
    if (first === undefined) throw new ServerUrlError("the document names no server; give the API's absolute URL with --server https://…");
    server = documentServer(first, read.baseUrl);
    if (level !== 'document' && list.length > 1) notes.push(`servers of the ${level}: the first, ${list[0]!.url}, is used; ignored: ${list.slice(1).map((s) => s.url).join(', ')}`);
  }

  const converter = new SchemaConverter(read.version, document);
  let idempotencyHeader: string | undefined;
  const parameters: ParameterArgument[] = [];
  for (const parameter of parametersOf(located)) {
    const unmapped = (reason: string) => (parameter.required ? blockers : notes).push(`${where(parameter)}${parameter.required ? ' (required)' : ''} is not mapped: ${reason}`);
    const lower = parameter.name.toLowerCase();
    if (parameter.in === 'cookie') {
      unmapped('a contract sends no cookies');
      continue;
    }
    if (parameter.in === 'header') {
      if (lower === 'idempotency-key') {
        idempotencyHeader = parameter.name;
        continue;
      }
      if (lower === 'accept' || lower === 'content-type' || lower === 'authorization') {
        notes.push(`${where(parameter)} is left out: OpenAPI says to ignore it (the body's media type and the security scheme say it)`);
        continue;
      }
      if (reservedHeaderReason(parameter.name) !== undefined) {
        unmapped(`the gateway derives '${parameter.name}' itself, and a contract may not set it`);
        continue;
      }
      if ((CREDENTIAL_HEADERS as readonly string[]).includes(lower) || isCredentialName(parameter.name)) {
        notes.push(
          `${where(parameter)} is not mapped: it carries a credential, which a contract names by reference only; store it with oncegate vault set <ref> --kind header --header ${parameter.name} --bind … and add credential_ref: <ref> to the tool`,
        );
        continue;
      }
      if (!HEADER_NAME.test(parameter.name)) {
        unmapped(`'${parameter.name}' is not a header name a contract can set (letters, digits, '-')`);
        continue;
      }
    }
    if (parameter.in === 'query' && isCredentialName(parameter.name)) {
      unmapped('it carries a credential, and the gateway puts none in a URL (URLs are logged and recorded)');
      continue;
    }
    const problem = serialisationProblem(parameter);
    if (problem !== undefined) {
      unmapped(problem);
      continue;
    }
    parameters.push({ parameter, name: parameter.name });
  }

  // The JSON request body, as the one argument `body`.
  let body: { schema: unknown; required: boolean; mediaType: string; description: string | undefined } | undefined;
  const requestBody = operation.requestBody;
  if (isRecord(requestBody)) {
    const types = Object.keys(requestBody.content ?? {});
    const json = types.find((type) => type.split(';')[0]!.trim().toLowerCase() === 'application/json') ?? types.find(isJsonMediaType);
    const unmapped = (reason: string) => (requestBody.required ? blockers : notes).push(`request body${requestBody.required ? ' (required)' : ''} is not mapped: ${reason}`);
    if (ref.method === 'GET' || ref.method === 'HEAD') unmapped(`a contract sends no body with ${ref.method}`);
    else if (json === undefined) unmapped(`it is ${types.join(', ') || 'of no media type'}, and a contract sends JSON`);
    else {
      const others = types.filter((type) => type !== json);
      if (others.length > 0) notes.push(`request body: sent as ${json}; also offered as ${others.join(', ')}, not mapped`);
      body = {
        schema: converter.convert(requestBody.content?.[json]?.schema ?? {}, true),
        required: requestBody.required === true,
        mediaType: json,
        description: requestBody.description,
      };
    }
  }

  if (operation.callbacks !== undefined && Object.keys(operation.callbacks).length > 0) {
    notes.push(`callbacks (${Object.keys(operation.callbacks).join(', ')}) are not mapped: the gateway makes calls, it does not receive them`);
  }
  if (operation.deprecated === true) notes.push('the document marks this operation deprecated');
  if (blockers.length > 0) return { operation: ref, reasons: blockers };

  // Argument names: the parameter's own where it is free and valid; a clash with `body` or another location is resolved
  // by the location (`id_query`), and said.
  const owners = new Map<string, string>(body === undefined ? [] : [['body', 'the request body']]);
  const order = ['path', 'query', 'header'];
  parameters.sort((a, b) => order.indexOf(a.parameter.in) - order.indexOf(b.parameter.in));
  for (const argument of parameters) {
    const base = nameOf(argument.parameter.name) || argument.parameter.in;
    const clash = owners.get(base);
    const wanted = clash === undefined ? base : `${base}_${argument.parameter.in}`;
    let name = wanted;
    for (let n = 2; owners.has(name); n += 1) name = `${wanted}_${n}`;
    argument.name = name;
    owners.set(name, where(argument.parameter));
    if (clash !== undefined) notes.push(`${where(argument.parameter)} is argument '${name}': '${base}' is ${clash}`);
    else if (name !== argument.parameter.name) notes.push(`${where(argument.parameter)} is argument '${name}' (not a valid argument name as it is)`);
  }

  const properties: Json = {};
  const required: string[] = [];
  for (const { parameter, name } of parameters) {
    const converted = converter.convert(parameter.schema ?? {}, false);
    const schema: Json = isRecord(converted) ? { ...converted } : {};
    if (parameter.description !== undefined && schema['description'] === undefined) schema['description'] = parameter.description;
    if (parameter.example !== undefined && schema['examples'] === undefined) schema['examples'] = [parameter.example];
    if (parameter.deprecated === true) schema['deprecated'] = true;
    properties[name] = schema;
    if (parameter.required === true) required.push(name);
  }
  if (body !== undefined) {
    const schema = isRecord(body.schema) && body.description !== undefined && body.schema['description'] === undefined ? { description: body.description, ...body.schema } : body.schema;
    properties['body'] = schema;
    if (body.required) required.push('body');
  }

  const absentQuery = parameters.filter(({ parameter, name }) => parameter.in === 'query' && parameter.required !== true && !(isRecord(properties[name]) && 'default' in properties[name]));
  if (absentQuery.length > 0) {
    const names = absentQuery.map(({ parameter }) => parameter.name);
    notes.push(
      `optional query parameter${names.length === 1 ? '' : 's'} ${names.map((name) => `'${name}'`).join(', ')}: sent empty ('${encodeURIComponent(names[0]!)}=') when the agent leaves ${names.length === 1 ? 'it' : 'one'} out, as a contract's URL always holds its parameters`,
    );
  }
  notes.push(...converter.notes());

  const operationClass: ImportedClass =
    ref.method === 'GET' || ref.method === 'HEAD' ? 'read_only' : ref.method === 'PUT' || ref.method === 'DELETE' || idempotencyHeader !== undefined ? 'idempotent_write' : 'irreversible';

  const security = operationSecurity(operation.security ?? (document['security'] as SecurityRequirement[] | undefined), context.schemes);
  notes.push(...security.notes);

  const argumentOf = new Map(parameters.map(({ parameter, name }) => [`${parameter.in}:${parameter.name}`, name]));
  const path = ref.path
    .split(/(\{[^}]*\})/)
    .map((part) => {
      const name = /^\{(.*)\}$/.exec(part)?.[1];
      return name === undefined ? encodePathLiteral(part) : `{{args.${argumentOf.get(`path:${name}`) ?? nameOf(name)}}}`;
    })
    .join('');
  const query = parameters.filter(({ parameter }) => parameter.in === 'query').map(({ parameter, name }) => `${encodeURIComponent(parameter.name)}={{args.${name}}}`);
  const url = `${server}${path}${query.length === 0 ? '' : `?${query.join('&')}`}`;
  const headers: Record<string, string> = {};
  for (const { parameter, name } of parameters) if (parameter.in === 'header') headers[parameter.name] = `{{args.${name}}}`;
  if (body !== undefined && body.mediaType.split(';')[0]!.trim().toLowerCase() !== 'application/json') headers['Content-Type'] = body.mediaType;

  const serverUrl = new URL(server);
  const description = [operation.summary, operation.description].map((text) => text?.trim() ?? '').filter((text) => text !== '').join('\n\n') || `${ref.method} ${ref.path}`;
  const defs = converter.defs();
  const inputSchema: Json = {
    type: 'object',
    properties,
    ...(required.length > 0 ? { required } : {}),
    additionalProperties: false,
    ...(defs === undefined ? {} : { $defs: defs }),
  };
  const http: Json = {
    method: ref.method,
    url,
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
    ...(body === undefined ? {} : { body: '{{args.body}}' }),
    ...(idempotencyHeader === undefined ? {} : { idempotency_header: idempotencyHeader }),
  };
  const target = `${serverUrl.host}${serverUrl.pathname.replace(/\/$/, '')}${ref.path}`.replace(/\s+/g, '_');
  return {
    located,
    operationClass,
    server,
    security: security.credential,
    notes,
    build: (name, credentialRef) => ({
      name,
      description,
      class: operationClass,
      channel: 'http',
      target,
      ...(credentialRef === undefined ? {} : { credential_ref: credentialRef }),
      input_schema: inputSchema,
      http,
      correlation_window: CORRELATION_WINDOWS[operationClass],
    }),
  };
}

/** The credential reference of each mapped scheme: `--credential` for all (one kind only), else one per scheme. */
function credentialRefs(drafts: readonly ToolDraft[], credential: string | undefined): Map<string, string> {
  const schemes = new Map<string, MappedScheme>();
  for (const draft of drafts) if (draft.security !== undefined) schemes.set(draft.security.scheme, draft.security);
  const refs = new Map<string, string>();
  if (credential !== undefined) {
    const shapes = new Set([...schemes.values()].map((scheme) => `${scheme.kind}:${scheme.header ?? ''}`));
    if (shapes.size > 1) {
      const list = [...schemes.values()].map((scheme) => `${scheme.scheme} (${scheme.kind}${scheme.header ? ` ${scheme.header}` : ''})`).join(', ');
      throw new CredentialOptionError(`--credential names one credential, but the operations use schemes the vault holds as different kinds: ${list}; import them apart with --tag or --operation, or leave out --credential`);
    }
    for (const name of schemes.keys()) refs.set(name, credential);
    return refs;
  }
  const names = new UniqueNames();
  for (const name of schemes.keys()) refs.set(name, names.claim(credentialRefOf(name)));
  return refs;
}

function credentialSetups(tools: readonly ImportedTool[], drafts: readonly ToolDraft[], refs: ReadonlyMap<string, string>): CredentialSetup[] {
  const byRef = new Map<string, { kind: MappedCredentialKind; header: string | undefined; schemes: Set<string>; bindings: Set<string>; tools: string[] }>();
  for (const tool of tools) {
    const draft = drafts.find((candidate) => candidate.located.ref === tool.operation);
    if (draft?.security === undefined) continue;
    const ref = refs.get(draft.security.scheme)!;
    const entry = byRef.get(ref) ?? { kind: draft.security.kind, header: draft.security.header, schemes: new Set<string>(), bindings: new Set<string>(), tools: [] };
    entry.schemes.add(draft.security.scheme);
    entry.bindings.add(bindingOf(draft.server));
    entry.tools.push(tool.name);
    byRef.set(ref, entry);
  }
  return [...byRef].map(([ref, entry]) => ({
    ref,
    kind: entry.kind,
    header: entry.header,
    schemes: [...entry.schemes],
    bindings: [...entry.bindings],
    tools: entry.tools,
    command: [
      `oncegate vault set ${ref} --kind ${entry.kind}`,
      ...(entry.kind === 'header' ? [`--header ${entry.header}`] : []),
      ...(entry.kind === 'basic' ? ['--username <user>'] : []),
      ...[...entry.bindings].map((binding) => `--bind ${binding}`),
    ].join(' '),
  }));
}
