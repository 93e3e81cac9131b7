import { dirname, isAbsolute, join, normalize } from 'node:path';
import type { Node } from 'yaml';
import { recoveryPolicyOf, type OperationClass } from '@oncegate/domain';
// The published schema of the file (generated from tools-file.ts by tools/config-schemas), compiled ahead of time beside
// it so that no process compiles it when it starts; the checks below are what it cannot say. It is published at the
// repository root (schemas/), where editors and users find it, and bundled from there.
// eslint-disable-next-line @nx/enforce-module-boundaries -- the one copy of the schema, outside every project
import { validate as validateToolsFile } from '../../../schemas/tools.validate.mjs';
import { ContractValidationError, type ContractIssue } from './contract-issue';
import { CREDENTIAL_REF_RULE, isCredentialRef } from './credential-ref';
import { DURATION_FORMS, parseDuration } from './duration';
import { checkInputSchema, type CheckedInputSchema } from './input-schema';
import { checkHeaders, checkJsonTemplate, checkTemplates, checkUrl, type ToolScope } from './request-checks';
import { reservedHeaderReason } from './request-headers';
import { SchemaCheckedYaml, type SchemaMessages, type Segment } from './schema-issues';
import { checkAbsolutePath, checkArgv, checkHost, checkHostKey } from './ssh-checks';
import { didYouMean } from './suggest';
import { scanTemplates } from './template';
import {
  DEFAULT_LIMITS,
  DEFAULT_MARKER_STARTED_WAIT_MS,
  DEFAULT_REDELIVERY_GRACE_MS,
  DEFAULT_SSH_PORT,
  MAX_RESPONSE_BYTES,
  RESERVED_TOOL_NAMES,
  type ApprovalMode,
  type ContractFile,
  type CorrelationWindow,
  type HttpMethod,
  type MarkerProtocol,
  type PreconditionValue,
  type RequestTemplate,
  type StatusQuery,
  type ToolContract,
  type ToolLimits,
} from './tool-contract';
import type { HttpRequest, MarkerSection, SshCommand, StatusQuerySection, ToolEntry, ToolsFile } from './tools-file';
import { rememberArgumentValidator } from './validate-arguments';
import { childPath, nodeAt, openYamlDocument, type YamlContext } from './yaml-reader';
import { deepFreeze } from './deep-freeze';

/** Fields written at the tool level that belong in a block, and other well-meant mistakes. */
const TOOL_FIELD_HINTS: Readonly<Record<string, string>> = {
  ...Object.fromEntries(['method', 'url', 'headers', 'body', 'idempotency_header'].map((f) => [f, "it belongs inside 'http:'"])),
  ...Object.fromEntries(['host', 'port', 'user', 'host_key', 'cwd', 'argv'].map((f) => [f, "it belongs inside 'ssh:'"])),
  ...Object.fromEntries(['response_bytes', 'connect_timeout', 'response_timeout'].map((f) => [f, "it belongs inside 'limits:'"])),
  ...Object.fromEntries(['directory', 'written_before_work', 'started_wait'].map((f) => [f, "it belongs inside 'marker:'"])),
  exclude: "it belongs inside 'fingerprint:'",
  precondition: "it belongs inside 'status_query:'",
  secrets: "did you mean 'secret_arguments'?",
  annotations: "MCP annotations are derived from 'class', not written",
  idempotency_key: "name the key argument with 'durable_key_argument', or the header with 'http.idempotency_header'",
};

/** Where a field the schema does not know belongs instead, by the shape of the mapping it was written in. */
const FIELD_HINTS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  'tools[]': TOOL_FIELD_HINTS,
  'tools[].fingerprint': {
    defaults: "defaults come from 'default' in input_schema.properties",
    secret: "list secret arguments in the tool's 'secret_arguments'",
  },
  'tools[].status_query.http': { body: 'a status query is a GET and carries no body' },
};

/** What a missing required field should hold, by its shape. */
const REQUIRED_HINTS: Readonly<Record<string, string>> = {
  version: ": write 'version: 1' at the top",
  tools: ': a list of tool contracts',
  'tools[].channel': ": 'http', 'ssh' or a plugin channel name",
  'tools[].target': ': the logical target name recorded with every execution',
  'tools[].input_schema': ': a JSON Schema with type: object',
  'tools[].correlation_window': `: a duration (${DURATION_FORMS}) or until_confirmed`,
  'tools[].ssh.host_key': ": the pinned public host key, 'ssh-ed25519 AAAA...' (ssh-keyscan prints it)",
  'tools[].ssh.argv': ': the command as a list of separate arguments',
  'tools[].status_query.http': ': the GET request that reads the current state',
  'tools[].status_query.precondition': ': the pointer and value that show the write has not happened',
  'tools[].status_query.precondition.pointer': ": a JSON pointer into the response body, e.g. '/version'",
  'tools[].status_query.precondition.equals': ': the value, or {{args.<name>}}',
  'tools[].marker.directory': ': the absolute directory on the host that holds markers',
  'tools[].marker.written_before_work': ': true when the marker is written before the work starts',
};

const MESSAGES: SchemaMessages = {
  unknownField: (shape, name) => {
    const hint = FIELD_HINTS[shape]?.[name];
    return hint === undefined ? undefined : `unknown field '${name}' — ${hint}`;
  },
  requiredField: (shape, name) => {
    if (shape === 'tools[].input_schema' && name === 'type') return "an MCP input schema must have 'type: object'";
    return `missing required field '${name}'${REQUIRED_HINTS[childPath(shape, name)] ?? ''}`;
  },
  invalidValue: (shape, value) => (shape === 'version' ? `unsupported version ${JSON.stringify(value)}; this gateway reads version 1` : undefined),
};

const BUILT_IN_CHANNELS = ['http', 'ssh'];

/**
 * How a plugin channel checks its `plugin:` section (the dispatcher kit's `contract.check`): it reports each problem
 * at a path inside the section, and the file's check places it at that node's line and column like any other issue.
 */
export type PluginSectionCheck = (
  section: Readonly<Record<string, unknown>>,
  report: (path: ReadonlyArray<string | number>, reason: string) => void,
  tool: PluginSectionTool,
) => void;

/**
 * The tool whose section a plugin channel checks, as far as a section's check may depend on it; `earlier` lets a
 * channel check what tools must agree on (two tools naming one server must say the same of it) without keeping state
 * between files.
 */
export interface PluginSectionTool {
  /** The tool's class, when the file gives a valid one. */
  readonly operationClass: OperationClass | undefined;
  /** The tool's name, when the file gives a valid one. */
  readonly name?: string | undefined;
  /** The vault credential the tool names (`credential_ref`), `null` when none. */
  readonly credentialRef?: string | null;
  /** The sections of this channel's tools declared above this one in the same file (each already checked). */
  readonly earlier?: ReadonlyArray<{ readonly name: string; readonly section: Readonly<Record<string, unknown>> }>;
}

/** What a contract file is checked with beyond the built-in channels: the sections of the plugin channels known here. */
export interface ContractCheckOptions {
  readonly pluginChannels?: ReadonlyMap<string, PluginSectionCheck>;
  /**
   * Reads a file that an `include:` names (its path already resolved against the including file's folder), throwing
   * the file system's error when it cannot. This library reads no file itself: without a reader, a file that includes
   * others is refused at its `include:`.
   */
  readonly readIncluded?: (file: string) => string;
}

export type ContractCheck =
  | { readonly ok: true; readonly contract: ContractFile }
  | { readonly ok: false; readonly issues: readonly ContractIssue[] };

/** Where a tool name was first declared, for the duplicate's message. */
interface FirstDeclared {
  readonly file: string;
  readonly path: string;
  readonly line: number;
}

/** One file of a contract and the files it includes, checked together: tool names are unique across them all. */
interface ContractSet {
  readonly options: ContractCheckOptions;
  readonly firstByName: Map<string, FirstDeclared>;
  /** Each file checked so far (normalised path) and the file that included it (`null` for the first one). */
  readonly files: Map<string, string | null>;
  readonly issues: ContractIssue[];
  readonly tools: ToolContract[];
  readonly validators: CheckedInputSchema['validator'][];
}

/**
 * Parses and validates the text of a tool contract file: against schemas/tools.schema.json first, then the rules a
 * schema cannot express; then each file it includes (`options.readIncluded`), the same way. Every problem is
 * collected in one pass; the result is either the whole normalised contract (the tools of every file, the file's own
 * first) or the list of issues, each file's in file order.
 */
export function checkContractFile(text: string, file: string, options: ContractCheckOptions = {}): ContractCheck {
  const set: ContractSet = { options, firstByName: new Map(), files: new Map([[normalize(file), null]]), issues: [], tools: [], validators: [] };
  checkOneFile(set, text, file);
  if (set.issues.length > 0) return { ok: false, issues: set.issues };
  const frozen = set.tools.map((tool, index) => {
    const frozenTool = deepFreeze(tool);
    const validator = set.validators[index];
    if (validator !== undefined) rememberArgumentValidator(frozenTool, validator);
    return frozenTool;
  });
  const included = [...set.files.keys()].slice(1);
  return { ok: true, contract: Object.freeze({ file, version: 1 as const, tools: Object.freeze(frozen), included: Object.freeze(included) }) };
}

/** Like `checkContractFile`, but throws `ContractValidationError` carrying every issue. */
export function parseContractFile(text: string, file: string, options: ContractCheckOptions = {}): ContractFile {
  const result = checkContractFile(text, file, options);
  if (!result.ok) throw new ContractValidationError(file, result.issues);
  return result.contract;
}

/** Checks one file of the set, then the files it includes, depth first. */
function checkOneFile(set: ContractSet, text: string, file: string): void {
  const { ctx, root } = openYamlDocument(text, file);
  const done = (): void => void set.issues.push(...sortIssues(ctx.issues));
  if (ctx.issues.length > 0) return done();
  if (root === undefined) {
    ctx.report(null, '', "the file is empty; expected 'version: 1' and a 'tools:' list");
    return done();
  }
  const checked = new SchemaCheckedYaml<ToolsFile>(ctx, root, validateToolsFile, MESSAGES);
  const written = checked.value as Partial<ToolsFile> | null;
  const entries: unknown[] = Array.isArray(written?.tools) ? written.tools : [];
  const sections = new PluginSectionsSeen();
  entries.forEach((entry, index) => {
    checkUniqueName(checked, entry, index, set.firstByName);
    const parsed = parseTool(checked, entry, index, set.options, sections);
    if (parsed === undefined) return;
    set.tools.push(parsed.tool);
    set.validators.push(parsed.validator);
  });
  const includes = (checked.valid<string[]>(['include']) ?? []).map((entry, index) => ({ entry, ...checked.where(['include', index]) }));
  const readable: Array<{ file: string; text: string }> = [];
  for (const { entry, node, path } of includes) {
    const included = isAbsolute(entry) ? normalize(entry) : join(dirname(file), entry);
    const by = set.files.get(included);
    if (by !== undefined) {
      ctx.report(node, path, by === null ? `'${entry}' is the file that includes the others` : `'${entry}' (${included}) is included already, by ${by}`);
      continue;
    }
    if (set.options.readIncluded === undefined) {
      ctx.report(node, path, `'${entry}' names another file, which a check of this text alone does not read`);
      continue;
    }
    set.files.set(included, file);
    try {
      readable.push({ file: included, text: set.options.readIncluded(included) });
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code;
      ctx.report(node, path, `cannot read '${included}': ${code === 'ENOENT' ? 'no such file' : error instanceof Error ? error.message : String(error)}`);
    }
  }
  done();
  for (const next of readable) checkOneFile(set, next.text, next.file);
}

/** Tool names are unique across a file and the files it includes; checked on the raw name so an otherwise broken tool still counts. */
function checkUniqueName(checked: SchemaCheckedYaml<ToolsFile>, entry: unknown, index: number, firstByName: Map<string, FirstDeclared>): void {
  const name = isRecord(entry) ? entry['name'] : undefined;
  if (typeof name !== 'string') return;
  const { node, path } = checked.where(['tools', index, 'name']);
  const first = firstByName.get(name);
  if (first === undefined) {
    firstByName.set(name, { file: checked.ctx.file, path: childPath('tools', index), line: checked.ctx.positionOf(node.range?.[0] ?? 0).line });
    return;
  }
  const where = first.file === checked.ctx.file ? first.path : `${first.path} of ${first.file}`;
  checked.ctx.report(node, path, `duplicate tool name '${name}' (first declared at ${where}, line ${first.line})`);
}

function sortIssues(issues: readonly ContractIssue[]): ContractIssue[] {
  return [...issues].sort((a, b) => a.line - b.line || a.column - b.column);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Internal: a value the checks already reported as missing or invalid cannot be reached here. */
function known<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('contract parser: a reported field reached the model');
  return value;
}

/** One tool's fields below `tools[index]`, read where the schema found them valid. */
class ToolReader {
  constructor(
    readonly checked: SchemaCheckedYaml<ToolsFile>,
    readonly tool: Partial<ToolEntry>,
    readonly index: number,
  ) {}

  get ctx(): YamlContext {
    return this.checked.ctx;
  }

  at(...segments: Segment[]): Segment[] {
    return ['tools', this.index, ...segments];
  }

  /** Whether the field is written, whatever its value. */
  has(field: keyof ToolEntry): boolean {
    return Object.hasOwn(this.tool, field);
  }

  /** A field's value where the schema found it valid; `undefined` otherwise or when absent. */
  valid<V>(...segments: Segment[]): V | undefined {
    return this.checked.valid<V>(this.at(...segments));
  }

  where(...segments: Segment[]): { node: Node; path: string } {
    return this.checked.where(this.at(...segments));
  }

  report(segments: Segment[], reason: string): void {
    this.checked.report(this.at(...segments), reason);
  }

  /** Reports a field that must not be there, at its key. */
  forbid(field: keyof ToolEntry, reason: string): void {
    if (!this.has(field)) return;
    this.checked.withdraw(this.at(field));
    this.checked.reportKey(this.at(field), reason);
  }

  /** True when nothing was reported below the tool's field since `before` (an issue count), by the schema or since. */
  clean(before: number, ...segments: Segment[]): boolean {
    return this.ctx.issues.length === before && this.checked.ok(this.at(...segments));
  }

  /** Reports a field a rule beyond the schema requires, at the tool. */
  require(field: keyof ToolEntry, what: string): boolean {
    if (this.has(field)) return true;
    this.ctx.report(this.where().node, this.where(field).path, `missing required field '${field}'${what}`);
    return false;
  }
}

/** The plugin sections of one file's tools so far, by channel: what a later tool's section check sees as `earlier`. */
class PluginSectionsSeen {
  private readonly byChannel = new Map<string, Array<{ readonly name: string; readonly section: Readonly<Record<string, unknown>> }>>();

  of(channel: string): ReadonlyArray<{ readonly name: string; readonly section: Readonly<Record<string, unknown>> }> {
    return [...(this.byChannel.get(channel) ?? [])];
  }

  add(channel: string, name: string, section: Readonly<Record<string, unknown>>): void {
    const seen = this.byChannel.get(channel) ?? [];
    seen.push({ name, section });
    this.byChannel.set(channel, seen);
  }
}

function parseTool(
  checked: SchemaCheckedYaml<ToolsFile>,
  entry: unknown,
  index: number,
  options: ContractCheckOptions,
  sections: PluginSectionsSeen,
): { tool: ToolContract; validator: CheckedInputSchema['validator'] } | undefined {
  if (!isRecord(entry)) return undefined;
  const tool = new ToolReader(checked, entry as Partial<ToolEntry>, index);
  const { ctx } = tool;
  const before = ctx.issues.length;

  const name = tool.valid<string>('name');
  if (name !== undefined && (RESERVED_TOOL_NAMES as readonly string[]).includes(name)) tool.report(['name'], `'${name}' is reserved for the gateway's built-in tool`);
  const operationClass = tool.valid<OperationClass>('class');
  const channel = tool.valid<string>('channel');
  if (channel === 'http' && operationClass === 'remote_command') {
    tool.report(['channel'], 'a remote_command runs on a host and is recovered by probing a marker there: use channel ssh or a plugin channel');
  }
  const credentialRef = tool.valid<string>('credential_ref') ?? null;
  if (credentialRef !== null && !isCredentialRef(credentialRef)) tool.report(['credential_ref'], CREDENTIAL_REF_RULE);

  const schema = tool.valid('input_schema') === undefined ? undefined : checkInputSchema(ctx, tool.where('input_schema').node, tool.where('input_schema').path);
  const args = schema?.index;
  const secretArguments = checkArgumentNames(tool, ['secret_arguments'], args);
  const scope: ToolScope = { ctx, args, secrets: new Set(secretArguments) };

  const durable = tool.valid<string>('durable_key_argument');
  let durableKeyArgument: string | null = null;
  if (durable !== undefined) {
    const declared = args?.schemaOf(durable);
    if (args !== undefined && (durable.includes('.') || declared === undefined)) {
      tool.report(['durable_key_argument'], `'${durable}' is not a top-level argument in input_schema.properties${didYouMean(durable, args.topLevelNames())}`);
    } else if (declared !== undefined && declared['type'] !== undefined && declared['type'] !== 'string') {
      tool.report(['durable_key_argument'], `the durable key argument '${durable}' must be a string argument`);
    } else if (scope.secrets.has(durable)) {
      tool.report(['durable_key_argument'], `'${durable}' is a secret argument; a secret must not be the durable key (the key is stored and shown)`);
    } else durableKeyArgument = durable;
  }

  const request = readRequest(scope, tool, channel, {
    check: channel === undefined ? undefined : options.pluginChannels?.get(channel),
    tool: { operationClass, name, credentialRef, earlier: channel === undefined ? [] : sections.of(channel) },
  });
  if (request?.kind === 'plugin' && name !== undefined) sections.add(request.channel, name, request.config);
  const exclude = checkArgumentNames(tool, ['fingerprint', 'exclude'], args);

  const correlationWindow = readCorrelationWindow(tool);
  const graceDefault = operationClass === undefined ? DEFAULT_REDELIVERY_GRACE_MS : recoveryPolicyOf(operationClass).redeliveryGraceDefaultMs;
  let redeliveryGraceMs: number | null | undefined = graceDefault;
  if (graceDefault === null) {
    tool.forbid(
      'redelivery_grace',
      `${operationClass === 'irreversible' ? 'an' : 'a'} ${operationClass} tool answers a repeat inside its correlation window with the stored result, whatever was delivered; ` +
        'remove redelivery_grace (a caller that wants a second execution sends _meta["io.oncegate/new-intent"]: true)',
    );
  } else if (tool.has('redelivery_grace')) redeliveryGraceMs = readDuration(tool, ['redelivery_grace'], { allowZero: true });
  const approval = tool.valid<ApprovalMode>('approval') ?? 'none';

  let statusQuery: StatusQuery | null | undefined = null;
  if (channel !== undefined && !BUILT_IN_CHANNELS.includes(channel)) {
    // A plugin channel reads its own evidence, named in its section (and checked by the channel, when known here).
    tool.forbid('status_query', `a tool on plugin channel '${channel}' names its status query inside its plugin: section`);
  } else if (operationClass === 'conditional_write') {
    statusQuery = tool.require('status_query', ': a conditional write needs it to decide whether an unknown outcome took effect') ? readStatusQuery(scope, tool) : undefined;
  } else if (operationClass !== undefined) {
    tool.forbid('status_query', `only a conditional_write has a status query; this tool is ${operationClass}`);
  }
  let marker: MarkerProtocol | null | undefined = null;
  if (operationClass === 'remote_command') {
    marker = tool.require('marker', ': a remote command needs a durable marker to recover an unknown outcome') ? readMarker(scope, tool) : undefined;
  } else if (operationClass !== undefined) {
    tool.forbid('marker', `only a remote_command has a marker; this tool is ${operationClass}`);
  }
  const limits = readLimits(tool);

  if (!tool.clean(before)) return undefined;
  const { line, column } = ctx.positionOf(tool.where().node.range?.[0] ?? 0);
  const contract: ToolContract = {
    name: known(name),
    title: tool.valid<string>('title') ?? null,
    description: known(tool.valid<string>('description')),
    inputSchema: known(schema).schema,
    operationClass: known(operationClass),
    channel: known(channel),
    target: known(tool.valid<string>('target')),
    credentialRef,
    request: known(request),
    fingerprint: { exclude },
    secretArguments,
    durableKeyArgument,
    correlationWindow: known(correlationWindow),
    redeliveryGraceMs: known(redeliveryGraceMs),
    approval,
    statusQuery: known(statusQuery),
    marker: known(marker),
    limits: known(limits),
    source: { file: ctx.file, path: tool.where().path, line, column },
  };
  return { tool: contract, validator: known(schema).validator };
}

function readRequest(
  scope: ToolScope,
  tool: ToolReader,
  channel: string | undefined,
  plugin: { check: PluginSectionCheck | undefined; tool: PluginSectionTool },
): RequestTemplate | undefined {
  const { ctx } = scope;
  if (channel === undefined) return undefined;
  const blocks = ['http', 'ssh', 'plugin'] as const;
  const wanted = channel === 'http' ? 'http' : channel === 'ssh' ? 'ssh' : 'plugin';
  for (const block of blocks) {
    if (block !== wanted) tool.forbid(block, `a '${block}:' block does not belong to a tool on channel '${channel}'`);
  }
  if (!tool.require(wanted, wanted === 'plugin' ? ` with the settings of plugin channel '${channel}'` : ` with the ${wanted} request template`)) return undefined;
  if (wanted === 'http') return readHttp(scope, tool);
  if (wanted === 'ssh') return readSsh(scope, tool);
  const config = tool.valid<Record<string, unknown>>('plugin');
  const { node, path } = tool.where('plugin');
  if (config === undefined || !checkJsonTemplate(scope, node, path)) return undefined;
  if (plugin.check !== undefined) {
    const before = ctx.issues.length;
    plugin.check(
      config,
      (at, reason) => {
        ctx.report(nodeAt(ctx, node, at), at.reduce<string>((parent, key) => childPath(parent, key), path), reason);
      },
      plugin.tool,
    );
    if (ctx.issues.length > before) return undefined;
  }
  return { kind: 'plugin', channel, config };
}

function readHttp(scope: ToolScope, tool: ToolReader): RequestTemplate | undefined {
  const { ctx } = scope;
  const before = ctx.issues.length;
  const http = (tool.valid<unknown>('http') ?? tool.tool.http) as Partial<HttpRequest> | undefined;
  if (!isRecord(http)) return undefined;
  const method = tool.valid<string>('http', 'method')?.toUpperCase() as HttpMethod | undefined;
  const urlText = tool.valid<string>('http', 'url');
  const url = urlText === undefined ? undefined : checkUrl(scope, tool.where('http', 'url').node, tool.where('http', 'url').path, urlText);
  const headers = readHeaders(scope, tool, ['http', 'headers']);
  if (Object.hasOwn(http, 'body')) {
    const { node, path } = tool.where('http', 'body');
    if (method === 'GET' || method === 'HEAD') ctx.report(node, path, `a ${method} request carries no body`);
    else checkJsonTemplate(scope, node, path);
  }
  const header = tool.valid<string>('http', 'idempotency_header');
  let idempotencyHeader: string | null = null;
  if (header !== undefined) {
    const reserved = reservedHeaderReason(header);
    if (reserved !== undefined) tool.report(['http', 'idempotency_header'], reserved);
    else if (Object.keys(headers ?? {}).some((h) => h.toLowerCase() === header.toLowerCase())) {
      tool.report(['http', 'idempotency_header'], `'${header}' is also set in headers; the gateway sets it to the execution id`);
    } else idempotencyHeader = header;
  }
  if (!tool.clean(before, 'http')) return undefined;
  return { kind: 'http', method: known(method), url: known(url), headers: known(headers), body: http.body, idempotencyHeader };
}

/** `headers` of a request: `{}` when absent. */
function readHeaders(scope: ToolScope, tool: ToolReader, segments: Segment[]): Record<string, string> | undefined {
  const headers = tool.valid<Record<string, string | number | boolean>>(...segments);
  if (headers === undefined) return {};
  const { node, path } = tool.where(...segments);
  return checkHeaders(scope, node, path, headers);
}

function readSsh(scope: ToolScope, tool: ToolReader): RequestTemplate | undefined {
  const { ctx } = scope;
  const before = ctx.issues.length;
  const ssh = tool.tool.ssh as Partial<SshCommand> | undefined;
  if (!isRecord(ssh)) return undefined;
  const text = <R>(field: keyof SshCommand, check: (scope: ToolScope, node: Node, path: string, text: string) => R | undefined): R | undefined => {
    const value = tool.valid<string>('ssh', field);
    const { node, path } = tool.where('ssh', field);
    return value === undefined ? undefined : check(scope, node, path, value);
  };
  const host = text('host', checkHost);
  const hostKey = text('host_key', checkHostKey);
  const cwd = Object.hasOwn(ssh, 'cwd') ? text('cwd', checkAbsolutePath) : null;
  const items = tool.valid<(string | number | boolean)[]>('ssh', 'argv');
  const argv = items === undefined ? undefined : checkArgv(scope, tool.where('ssh', 'argv').node, tool.where('ssh', 'argv').path, items);
  if (!tool.clean(before, 'ssh')) return undefined;
  return {
    kind: 'ssh',
    host: known(host),
    port: tool.valid<number>('ssh', 'port') ?? DEFAULT_SSH_PORT,
    user: known(tool.valid<string>('ssh', 'user')),
    hostKey: known(hostKey),
    cwd: known(cwd),
    argv: known(argv),
  };
}

/** A list of argument names or dotted paths; undeclared ones are reported and left out. */
function checkArgumentNames(tool: ToolReader, segments: Segment[], args: CheckedInputSchema['index'] | undefined): string[] {
  const names = tool.valid<string[]>(...segments) ?? [];
  if (args === undefined) return names;
  return names.filter((name, index) => {
    if (args.has(name)) return true;
    tool.report([...segments, index], `'${name}' is not an argument in input_schema.properties${didYouMean(name, args.topLevelNames())}`);
    return false;
  });
}

/** A duration the schema let through, in milliseconds; a zero where it means nothing is refused. */
function readDuration(tool: ToolReader, segments: Segment[], options: { allowZero: boolean }): number | undefined {
  const value = tool.valid<string | number>(...segments);
  if (value === undefined) return undefined;
  const ms = parseDuration(value);
  if (ms === undefined) {
    // Only a duration too long to count in milliseconds passes the schema and fails here.
    tool.report(segments, `'${value}' is not a duration; write ${DURATION_FORMS}`);
    return undefined;
  }
  if (ms === 0 && !options.allowZero) {
    tool.report(segments, 'must be longer than 0');
    return undefined;
  }
  return ms;
}

function readCorrelationWindow(tool: ToolReader): CorrelationWindow | undefined {
  if (tool.valid('correlation_window') === 'until_confirmed') return { kind: 'until_confirmed' };
  const ms = readDuration(tool, ['correlation_window'], { allowZero: false });
  return ms === undefined ? undefined : { kind: 'duration', ms };
}

function readStatusQuery(scope: ToolScope, tool: ToolReader): StatusQuery | undefined {
  const { ctx } = scope;
  const before = ctx.issues.length;
  const query = tool.tool.status_query as Partial<StatusQuerySection> | undefined;
  if (!isRecord(query)) return undefined;
  const urlText = tool.valid<string>('status_query', 'http', 'url');
  const urlAt = tool.where('status_query', 'http', 'url');
  const url = urlText === undefined ? undefined : checkUrl(scope, urlAt.node, urlAt.path, urlText);
  const headers = readHeaders(scope, tool, ['status_query', 'http', 'headers']);
  const pointer = tool.valid<string>('status_query', 'precondition', 'pointer');
  const precondition = isRecord(query.precondition) ? query.precondition : undefined;
  const equals = precondition !== undefined && Object.hasOwn(precondition, 'equals') ? readPreconditionValue(scope, tool, precondition['equals']) : undefined;
  if (!tool.clean(before, 'status_query')) return undefined;
  return { http: { method: 'GET', url: known(url), headers: known(headers) }, precondition: { pointer: known(pointer), equals: known(equals) } };
}

function readPreconditionValue(scope: ToolScope, tool: ToolReader, value: unknown): PreconditionValue | undefined {
  if (typeof value !== 'string' || !value.includes('{{')) return { kind: 'literal', value };
  const { node, path } = tool.where('status_query', 'precondition', 'equals');
  if (checkTemplates(scope, node, path, value) === undefined) return undefined;
  const whole = scanTemplates(value).whole;
  if (whole?.kind !== 'argument') {
    scope.ctx.report(node, path, 'must be a literal value or exactly one {{args.<name>}}');
    return undefined;
  }
  return { kind: 'argument', argument: whole.argument };
}

function readMarker(scope: ToolScope, tool: ToolReader): MarkerProtocol | undefined {
  const { ctx } = scope;
  const marker = tool.tool.marker as Partial<MarkerSection> | undefined;
  if (!isRecord(marker)) return undefined;
  const before = ctx.issues.length;
  // Marker paths never hold arguments: checked without the tool's arguments or secrets.
  const literal: ToolScope = { ctx, args: undefined, secrets: new Set() };
  const directoryText = tool.valid<string>('marker', 'directory');
  const directoryAt = tool.where('marker', 'directory');
  const directory = directoryText === undefined ? undefined : checkAbsolutePath(literal, directoryAt.node, directoryAt.path, directoryText);
  const startedWaitMs = Object.hasOwn(marker, 'started_wait') ? readDuration(tool, ['marker', 'started_wait'], { allowZero: true }) : DEFAULT_MARKER_STARTED_WAIT_MS;
  if (!tool.clean(before, 'marker')) return undefined;
  return { directory: known(directory), writtenBeforeWork: known(tool.valid<boolean>('marker', 'written_before_work')), startedWaitMs: known(startedWaitMs) };
}

const SIZE = /^(\d+)\s*(B|KB|KiB|MB|MiB)$/;
const SIZE_UNITS: Readonly<Record<string, number>> = { B: 1, KB: 1_000, KiB: 1_024, MB: 1_000_000, MiB: 1_048_576 };

function readLimits(tool: ToolReader): ToolLimits | undefined {
  const limits = tool.tool.limits;
  if (limits === undefined) return DEFAULT_LIMITS;
  if (!isRecord(limits)) return undefined;
  const before = tool.ctx.issues.length;
  let responseBytes: number | undefined = DEFAULT_LIMITS.responseBytes;
  const written = tool.valid<number | string>('limits', 'response_bytes');
  if (typeof written === 'number') responseBytes = written;
  else if (written !== undefined) {
    // The schema checks the form of a size with a unit; its range is known only once the unit is applied.
    const size = SIZE.exec(written);
    responseBytes = size ? Number(size[1]) * (SIZE_UNITS[size[2] ?? 'B'] ?? 1) : undefined;
    if (responseBytes === undefined || responseBytes < 1 || responseBytes > MAX_RESPONSE_BYTES) {
      tool.report(['limits', 'response_bytes'], `must be a size between 1 and 64MiB, as bytes or with a unit (B, KB, KiB, MB, MiB), got the string '${written}'`);
    }
  }
  const timeout = (field: 'connect_timeout' | 'response_timeout', fallback: number): number | undefined =>
    Object.hasOwn(limits, field) ? readDuration(tool, ['limits', field], { allowZero: false }) : fallback;
  const connectTimeoutMs = timeout('connect_timeout', DEFAULT_LIMITS.connectTimeoutMs);
  const responseTimeoutMs = timeout('response_timeout', DEFAULT_LIMITS.responseTimeoutMs);
  if (!tool.clean(before, 'limits')) return undefined;
  return { responseBytes: known(responseBytes), connectTimeoutMs: known(connectTimeoutMs), responseTimeoutMs: known(responseTimeoutMs) };
}
