import { isMap, isScalar, isSeq, type Node } from 'yaml';
import { OPERATION_CLASSES, recoveryPolicyOf, type OperationClass } from '@oncegate/domain';
import { ContractValidationError, type ContractIssue } from './contract-issue';
import { CREDENTIAL_REF_RULE, isCredentialRef } from './credential-ref';
import { DURATION_FORMS, parseDuration } from './duration';
import { checkInputSchema, type CheckedInputSchema } from './input-schema';
import { checkHeaders, checkJsonTemplate, checkTemplates, checkUrl, type ToolScope } from './request-checks';
import { reservedHeaderReason } from './request-headers';
import { checkAbsolutePath, checkArgv, checkHost, checkHostKey, checkUser } from './ssh-checks';
import { didYouMean } from './suggest';
import { hasTemplate, scanTemplates } from './template';
import {
  APPROVAL_MODES,
  DEFAULT_LIMITS,
  DEFAULT_MARKER_STARTED_WAIT_MS,
  DEFAULT_REDELIVERY_GRACE_MS,
  DEFAULT_SSH_PORT,
  HTTP_METHODS,
  MAX_RESPONSE_BYTES,
  PLUGIN_CHANNEL_PATTERN,
  RESERVED_TOOL_NAMES,
  TOOL_NAME_PATTERN,
  type ContractFile,
  type CorrelationWindow,
  type MarkerProtocol,
  type PreconditionValue,
  type RequestTemplate,
  type StatusQuery,
  type ToolContract,
  type ToolLimits,
} from './tool-contract';
import { rememberArgumentValidator } from './validate-arguments';
import { childPath, describeNode, MapReader, readBoolean, readEnum, readInteger, readList, readString, readStringList, openYamlDocument, YamlContext } from './yaml-reader';

const FILE_FIELDS = ['version', 'tools'] as const;

const TOOL_FIELDS = [
  'name', 'title', 'description', 'input_schema', 'class', 'channel', 'target', 'credential_ref',
  'http', 'ssh', 'plugin', 'fingerprint', 'secret_arguments', 'durable_key_argument',
  'correlation_window', 'redelivery_grace', 'approval', 'status_query', 'marker', 'limits',
] as const;

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

const HTTP_FIELDS = ['method', 'url', 'headers', 'body', 'idempotency_header'] as const;
const SSH_FIELDS = ['host', 'port', 'user', 'host_key', 'cwd', 'argv'] as const;
const STATUS_QUERY_FIELDS = ['http', 'precondition'] as const;
const STATUS_HTTP_FIELDS = ['method', 'url', 'headers'] as const;
const PRECONDITION_FIELDS = ['pointer', 'equals'] as const;
const MARKER_FIELDS = ['directory', 'written_before_work', 'started_wait'] as const;
const LIMITS_FIELDS = ['response_bytes', 'connect_timeout', 'response_timeout'] as const;
const FINGERPRINT_FIELDS = ['exclude'] as const;

const BUILT_IN_CHANNELS = ['http', 'ssh'];

/**
 * How a plugin channel checks its `plugin:` section (the dispatcher kit's `contract.check`): it reports each problem
 * at a path inside the section, and the file's check places it at that node's line and column like any other issue.
 */
export type PluginSectionCheck = (
  section: Readonly<Record<string, unknown>>,
  report: (path: ReadonlyArray<string | number>, reason: string) => void,
  tool: { readonly operationClass: OperationClass | undefined },
) => void;

/** What a contract file is checked with beyond the built-in channels: the sections of the plugin channels known here. */
export interface ContractCheckOptions {
  readonly pluginChannels?: ReadonlyMap<string, PluginSectionCheck>;
}

export type ContractCheck =
  | { readonly ok: true; readonly contract: ContractFile }
  | { readonly ok: false; readonly issues: readonly ContractIssue[] };

/**
 * Parses and validates the text of a tool contract file. Every problem is collected in one pass; the
 * result is either the whole normalised contract or the list of issues, in file order.
 */
export function checkContractFile(text: string, file: string, options: ContractCheckOptions = {}): ContractCheck {
  const { ctx, root: rootNode } = openYamlDocument(text, file);
  const fail = (): ContractCheck => ({ ok: false, issues: sortIssues(ctx.issues) });

  if (ctx.issues.length > 0) return fail();
  if (rootNode === undefined) {
    ctx.report(null, '', "the file is empty; expected 'version: 1' and a 'tools:' list");
    return fail();
  }
  const root = MapReader.of(ctx, rootNode, '');
  if (root === undefined) return fail();
  root.rejectUnknown(FILE_FIELDS);

  const versionNode = root.required('version', ": write 'version: 1' at the top");
  if (versionNode !== undefined) {
    const version = ctx.toJS(versionNode);
    if (version !== 1) ctx.report(versionNode, 'version', `unsupported version ${JSON.stringify(version)}; this gateway reads version 1`);
  }

  const tools: ToolContract[] = [];
  const validators: CheckedInputSchema['validator'][] = [];
  const toolsNode = root.required('tools', ': a list of tool contracts');
  const items = toolsNode === undefined ? undefined : readList(ctx, toolsNode, 'tools');
  if (toolsNode !== undefined && items !== undefined && items.length === 0) ctx.report(toolsNode, 'tools', 'declares no tools');
  const firstByName = new Map<string, { path: string; line: number }>();
  items?.forEach((item) => {
    const parsed = parseTool(ctx, item.node, item.path, toolsNode ?? null, options);
    checkUniqueName(ctx, item.node, item.path, firstByName);
    if (parsed === undefined) return;
    tools.push(parsed.tool);
    validators.push(parsed.validator);
  });

  if (ctx.issues.length > 0) return fail();
  const frozen = tools.map((tool, index) => {
    const frozenTool = deepFreeze(tool);
    const validator = validators[index];
    if (validator !== undefined) rememberArgumentValidator(frozenTool, validator);
    return frozenTool;
  });
  return { ok: true, contract: Object.freeze({ file, version: 1 as const, tools: Object.freeze(frozen) }) };
}

/** Like `checkContractFile`, but throws `ContractValidationError` carrying every issue. */
export function parseContractFile(text: string, file: string, options: ContractCheckOptions = {}): ContractFile {
  const result = checkContractFile(text, file, options);
  if (!result.ok) throw new ContractValidationError(file, result.issues);
  return result.contract;
}

/** Tool names are unique in a file; checked on the raw name so an otherwise broken tool still counts. */
function checkUniqueName(ctx: YamlContext, node: Node | null, path: string, firstByName: Map<string, { path: string; line: number }>): void {
  const nameNode = isMap(node) ? ctx.resolve(node.get('name', true)) : null;
  if (!isScalar(nameNode) || typeof nameNode.value !== 'string') return;
  const name = nameNode.value;
  const first = firstByName.get(name);
  if (first === undefined) {
    firstByName.set(name, { path, line: ctx.positionOf(nameNode.range?.[0] ?? 0).line });
    return;
  }
  ctx.report(nameNode, childPath(path, 'name'), `duplicate tool name '${name}' (first declared at ${first.path}, line ${first.line})`);
}

function sortIssues(issues: readonly ContractIssue[]): ContractIssue[] {
  return [...issues].sort((a, b) => a.line - b.line || a.column - b.column);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/** Internal: a value the parser already reported as missing or invalid cannot be reached here. */
function known<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('contract parser: a reported field reached the model');
  return value;
}

function parseTool(
  ctx: YamlContext,
  node: Node | null,
  path: string,
  listNode: Node | null,
  options: ContractCheckOptions,
): { tool: ToolContract; validator: CheckedInputSchema['validator'] } | undefined {
  const tool = MapReader.of(ctx, node, path, node ?? listNode);
  if (tool === undefined) return undefined;
  const before = ctx.issues.length;
  tool.rejectUnknown(TOOL_FIELDS, TOOL_FIELD_HINTS);
  const str = (field: string, node: Node | undefined): string | undefined =>
    node === undefined ? undefined : readString(ctx, node, tool.fieldPath(field));

  const name = str('name', tool.required('name'));
  if (name !== undefined && !TOOL_NAME_PATTERN.test(name)) {
    ctx.report(tool.optional('name'), tool.fieldPath('name'), `'${name}' is not a valid MCP tool name: 1 to 64 letters, digits, '_' or '-'`);
  } else if (name !== undefined && (RESERVED_TOOL_NAMES as readonly string[]).includes(name)) {
    ctx.report(tool.optional('name'), tool.fieldPath('name'), `'${name}' is reserved for the gateway's built-in tool`);
  }
  const titleNode = tool.optional('title');
  const title = titleNode === undefined ? null : str('title', titleNode);
  const description = str('description', tool.required('description'));

  const classNode = tool.required('class');
  const operationClass = classNode === undefined ? undefined : readEnum<OperationClass>(ctx, classNode, tool.fieldPath('class'), OPERATION_CLASSES);

  const channel = readChannel(ctx, tool, operationClass);
  const targetNode = tool.required('target', ': the logical target name recorded with every execution');
  const target = str('target', targetNode);
  if (target !== undefined && (/\s/.test(target) || hasTemplate(target))) {
    ctx.report(targetNode, tool.fieldPath('target'), 'must be a literal name without spaces or templates');
  }
  const credentialNode = tool.optional('credential_ref');
  const credentialRef = credentialNode === undefined ? null : str('credential_ref', credentialNode);
  if (typeof credentialRef === 'string' && !isCredentialRef(credentialRef)) {
    ctx.report(credentialNode, tool.fieldPath('credential_ref'), CREDENTIAL_REF_RULE);
  }

  const schemaNode = tool.required('input_schema', ': a JSON Schema with type: object');
  const schema = schemaNode === undefined ? undefined : checkInputSchema(ctx, schemaNode, tool.fieldPath('input_schema'));
  const args = schema?.index;
  const argumentList = (field: string): string[] => {
    const listNode = tool.optional(field);
    if (listNode === undefined) return [];
    return checkArgumentNames(ctx, listNode, tool.fieldPath(field), args);
  };
  const secretArguments = argumentList('secret_arguments');
  const scope: ToolScope = { ctx, args, secrets: new Set(secretArguments) };

  const durableKeyNode = tool.optional('durable_key_argument');
  let durableKeyArgument: string | null = null;
  if (durableKeyNode !== undefined) {
    const durable = readString(ctx, durableKeyNode, tool.fieldPath('durable_key_argument'));
    const durablePath = tool.fieldPath('durable_key_argument');
    const declared = durable === undefined || args === undefined ? undefined : args.schemaOf(durable);
    if (durable !== undefined && args !== undefined && (durable.includes('.') || declared === undefined)) {
      ctx.report(durableKeyNode, durablePath, `'${durable}' is not a top-level argument in input_schema.properties${didYouMean(durable, args.topLevelNames())}`);
    } else if (durable !== undefined && declared !== undefined && declared['type'] !== undefined && declared['type'] !== 'string') {
      ctx.report(durableKeyNode, durablePath, `the durable key argument '${durable}' must be a string argument`);
    } else if (durable !== undefined && scope.secrets.has(durable)) {
      ctx.report(durableKeyNode, durablePath, `'${durable}' is a secret argument; a secret must not be the durable key (the key is stored and shown)`);
    } else if (durable !== undefined) durableKeyArgument = durable;
  }

  const request = readRequest(scope, tool, channel, { check: channel === undefined ? undefined : options.pluginChannels?.get(channel), operationClass });
  const exclude = readFingerprint(ctx, tool, args);

  const windowNode = tool.required('correlation_window', `: a duration (${DURATION_FORMS}) or until_confirmed`);
  const correlationWindow = windowNode === undefined ? undefined : readCorrelationWindow(ctx, windowNode, tool.fieldPath('correlation_window'));
  const graceDefault = operationClass === undefined ? DEFAULT_REDELIVERY_GRACE_MS : recoveryPolicyOf(operationClass).redeliveryGraceDefaultMs;
  let redeliveryGraceMs: number | null | undefined = graceDefault;
  if (graceDefault === null) {
    tool.forbid(
      'redelivery_grace',
      `${operationClass === 'irreversible' ? 'an' : 'a'} ${operationClass} tool answers a repeat inside its correlation window with the stored result, whatever was delivered; ` +
        'remove redelivery_grace (a caller that wants a second execution sends _meta["io.oncegate/new-intent"]: true)',
    );
  } else {
    const graceNode = tool.optional('redelivery_grace');
    if (graceNode !== undefined) redeliveryGraceMs = readDuration(ctx, graceNode, tool.fieldPath('redelivery_grace'), { allowZero: true });
  }
  const approvalNode = tool.optional('approval');
  const approval = approvalNode === undefined ? 'none' : readEnum(ctx, approvalNode, tool.fieldPath('approval'), APPROVAL_MODES);

  let statusQuery: StatusQuery | null | undefined = null;
  if (channel !== undefined && !BUILT_IN_CHANNELS.includes(channel)) {
    // A plugin channel reads its own evidence, named in its section (and checked by the channel, when known here).
    tool.forbid('status_query', `a tool on plugin channel '${channel}' names its status query inside its plugin: section`);
  } else if (operationClass === 'conditional_write') {
    const queryNode = tool.required('status_query', ': a conditional write needs it to decide whether an unknown outcome took effect');
    statusQuery = queryNode === undefined ? undefined : readStatusQuery(scope, queryNode, tool.fieldPath('status_query'));
  } else if (operationClass !== undefined) {
    tool.forbid('status_query', `only a conditional_write has a status query; this tool is ${operationClass}`);
  }
  let marker: MarkerProtocol | null | undefined = null;
  if (operationClass === 'remote_command') {
    const markerNode = tool.required('marker', ': a remote command needs a durable marker to recover an unknown outcome');
    marker = markerNode === undefined ? undefined : readMarker(ctx, markerNode, tool.fieldPath('marker'));
  } else if (operationClass !== undefined) {
    tool.forbid('marker', `only a remote_command has a marker; this tool is ${operationClass}`);
  }
  const limitsNode = tool.optional('limits');
  const limits = limitsNode === undefined ? DEFAULT_LIMITS : readLimits(ctx, limitsNode, tool.fieldPath('limits'));

  if (ctx.issues.length > before) return undefined;
  const { line, column } = ctx.positionOf(tool.node.range?.[0] ?? 0);
  const contract: ToolContract = {
    name: known(name),
    title: known(title),
    description: known(description),
    inputSchema: known(schema).schema,
    operationClass: known(operationClass),
    channel: known(channel),
    target: known(target),
    credentialRef: known(credentialRef),
    request: known(request),
    fingerprint: { exclude },
    secretArguments,
    durableKeyArgument,
    correlationWindow: known(correlationWindow),
    redeliveryGraceMs: known(redeliveryGraceMs),
    approval: known(approval),
    statusQuery: known(statusQuery),
    marker: known(marker),
    limits: known(limits),
    source: { file: ctx.file, path, line, column },
  };
  return { tool: contract, validator: known(schema).validator };
}

function readChannel(ctx: YamlContext, tool: MapReader, operationClass: OperationClass | undefined): string | undefined {
  const node = tool.required('channel', ": 'http', 'ssh' or a plugin channel name");
  if (node === undefined) return undefined;
  const channel = readString(ctx, node, tool.fieldPath('channel'));
  if (channel === undefined) return undefined;
  if (!PLUGIN_CHANNEL_PATTERN.test(channel)) {
    ctx.report(node, tool.fieldPath('channel'), `'${channel}' is not a channel; expected http, ssh, or a plugin channel name ([a-z][a-z0-9-]*)${didYouMean(channel, BUILT_IN_CHANNELS)}`);
    return undefined;
  }
  if (channel === 'http' && operationClass === 'remote_command') {
    ctx.report(node, tool.fieldPath('channel'), 'a remote_command runs on a host and is recovered by probing a marker there: use channel ssh or a plugin channel');
  }
  return channel;
}

function readRequest(
  scope: ToolScope,
  tool: MapReader,
  channel: string | undefined,
  plugin: { check: PluginSectionCheck | undefined; operationClass: OperationClass | undefined },
): RequestTemplate | undefined {
  const { ctx } = scope;
  if (channel === undefined) return undefined;
  const blocks = ['http', 'ssh', 'plugin'] as const;
  const wanted = channel === 'http' ? 'http' : channel === 'ssh' ? 'ssh' : 'plugin';
  for (const block of blocks) {
    if (block !== wanted) tool.forbid(block, `a '${block}:' block does not belong to a tool on channel '${channel}'`);
  }
  const node = tool.required(wanted, wanted === 'plugin' ? ` with the settings of plugin channel '${channel}'` : ` with the ${wanted} request template`);
  if (node === undefined) return undefined;
  const path = tool.fieldPath(wanted);
  if (wanted === 'http') return readHttp(scope, node, path);
  if (wanted === 'ssh') return readSsh(scope, node, path);
  const section = MapReader.of(ctx, node, path);
  if (section === undefined || !checkJsonTemplate(scope, section.node, path)) return undefined;
  const config = ctx.toJS(section.node) as Record<string, unknown>;
  if (plugin.check !== undefined) {
    const before = ctx.issues.length;
    plugin.check(
      config,
      (at, reason) => {
        ctx.report(nodeAt(ctx, section.node, at), at.reduce<string>((parent, key) => childPath(parent, key), path), reason);
      },
      { operationClass: plugin.operationClass },
    );
    if (ctx.issues.length > before) return undefined;
  }
  return { kind: 'plugin', channel, config };
}

/** The node at `path` below `node`, or the deepest one on the way that exists (a missing field is reported at its mapping). */
function nodeAt(ctx: YamlContext, node: Node, path: ReadonlyArray<string | number>): Node {
  let current = node;
  for (const key of path) {
    const next = isMap(current) ? ctx.resolve(current.get(key, true)) : isSeq(current) && typeof key === 'number' ? ctx.resolve(current.items[key]) : null;
    if (next === null) break;
    current = next;
  }
  return current;
}

function readHttp(scope: ToolScope, node: Node, path: string): RequestTemplate | undefined {
  const { ctx } = scope;
  const http = MapReader.of(ctx, node, path);
  if (http === undefined) return undefined;
  const before = ctx.issues.length;
  http.rejectUnknown(HTTP_FIELDS);
  const methodNode = http.required('method');
  const method = methodNode === undefined ? undefined : readEnum(ctx, methodNode, http.fieldPath('method'), HTTP_METHODS, { caseInsensitive: true });
  const urlNode = http.required('url');
  const url = urlNode === undefined ? undefined : checkUrl(scope, urlNode, http.fieldPath('url'));
  const headersNode = http.optional('headers');
  const headers = headersNode === undefined ? {} : checkHeaders(scope, headersNode, http.fieldPath('headers'));
  const bodyNode = http.optional('body');
  if (bodyNode !== undefined) {
    if (method === 'GET' || method === 'HEAD') ctx.report(bodyNode, http.fieldPath('body'), `a ${method} request carries no body`);
    else checkJsonTemplate(scope, bodyNode, http.fieldPath('body'));
  }
  const idempotencyNode = http.optional('idempotency_header');
  let idempotencyHeader: string | null = null;
  if (idempotencyNode !== undefined) {
    const header = readString(ctx, idempotencyNode, http.fieldPath('idempotency_header'));
    if (header !== undefined && !/^[A-Za-z0-9-]+$/.test(header)) {
      ctx.report(idempotencyNode, http.fieldPath('idempotency_header'), `'${header}' is not a header name`);
    } else if (header !== undefined && reservedHeaderReason(header) !== undefined) {
      ctx.report(idempotencyNode, http.fieldPath('idempotency_header'), reservedHeaderReason(header)!);
    } else if (header !== undefined && Object.keys(headers ?? {}).some((h) => h.toLowerCase() === header.toLowerCase())) {
      ctx.report(idempotencyNode, http.fieldPath('idempotency_header'), `'${header}' is also set in headers; the gateway sets it to the execution id`);
    } else if (header !== undefined) idempotencyHeader = header;
  }
  if (ctx.issues.length > before) return undefined;
  return {
    kind: 'http',
    method: known(method),
    url: known(url),
    headers: known(headers),
    body: bodyNode === undefined ? undefined : ctx.toJS(bodyNode),
    idempotencyHeader,
  };
}

function readSsh(scope: ToolScope, node: Node, path: string): RequestTemplate | undefined {
  const { ctx } = scope;
  const ssh = MapReader.of(ctx, node, path);
  if (ssh === undefined) return undefined;
  const before = ctx.issues.length;
  ssh.rejectUnknown(SSH_FIELDS);
  const hostNode = ssh.required('host');
  const host = hostNode === undefined ? undefined : checkHost(scope, hostNode, ssh.fieldPath('host'));
  const portNode = ssh.optional('port');
  const port = portNode === undefined ? DEFAULT_SSH_PORT : readInteger(ctx, portNode, ssh.fieldPath('port'), 1, 65_535);
  const userNode = ssh.required('user');
  const user = userNode === undefined ? undefined : checkUser(scope, userNode, ssh.fieldPath('user'));
  const keyNode = ssh.required('host_key', ": the pinned public host key, 'ssh-ed25519 AAAA...' (ssh-keyscan prints it)");
  const hostKey = keyNode === undefined ? undefined : checkHostKey(scope, keyNode, ssh.fieldPath('host_key'));
  const cwdNode = ssh.optional('cwd');
  const cwd = cwdNode === undefined ? null : checkAbsolutePath(scope, cwdNode, ssh.fieldPath('cwd'));
  const argvNode = ssh.required('argv', ': the command as a list of separate arguments');
  const argv = argvNode === undefined ? undefined : checkArgv(scope, argvNode, ssh.fieldPath('argv'));
  if (ctx.issues.length > before) return undefined;
  return { kind: 'ssh', host: known(host), port: known(port), user: known(user), hostKey: known(hostKey), cwd: known(cwd), argv: known(argv) };
}

/** A list of argument names or dotted paths; undeclared ones are reported and left out. */
function checkArgumentNames(ctx: YamlContext, node: Node, path: string, args: CheckedInputSchema['index'] | undefined): string[] {
  const names = readStringList(ctx, node, path);
  if (names === undefined || args === undefined) return names ?? [];
  const items = readList(ctx, node, path) ?? [];
  return names.filter((name, index) => {
    if (args.has(name)) return true;
    const at = items[index]?.node ?? node;
    ctx.report(at, childPath(path, index), `'${name}' is not an argument in input_schema.properties${didYouMean(name, args.topLevelNames())}`);
    return false;
  });
}

function readFingerprint(ctx: YamlContext, tool: MapReader, args: CheckedInputSchema['index'] | undefined): string[] {
  const node = tool.optional('fingerprint');
  if (node === undefined) return [];
  const fingerprint = MapReader.of(ctx, node, tool.fieldPath('fingerprint'));
  if (fingerprint === undefined) return [];
  fingerprint.rejectUnknown(FINGERPRINT_FIELDS, {
    defaults: "defaults come from 'default' in input_schema.properties",
    secret: "list secret arguments in the tool's 'secret_arguments'",
  });
  const exclude = fingerprint.optional('exclude');
  return exclude === undefined ? [] : checkArgumentNames(ctx, exclude, fingerprint.fieldPath('exclude'), args);
}

function readDuration(ctx: YamlContext, node: Node, path: string, options: { allowZero: boolean }): number | undefined {
  const value = ctx.toJS(node);
  const ms = parseDuration(value);
  if (ms === undefined) {
    const shown = typeof value === 'string' ? `'${value}'` : describeNode(node);
    const hint = typeof value === 'number' ? ` — durations need a unit, e.g. '${value}s'` : '';
    ctx.report(node, path, `${shown} is not a duration; write ${DURATION_FORMS}${hint}`);
    return undefined;
  }
  if (ms === 0 && !options.allowZero) {
    ctx.report(node, path, 'must be longer than 0');
    return undefined;
  }
  return ms;
}

function readCorrelationWindow(ctx: YamlContext, node: Node, path: string): CorrelationWindow | undefined {
  const value = ctx.toJS(node);
  if (value === 'until_confirmed') return { kind: 'until_confirmed' };
  if (typeof value === 'string' && parseDuration(value) === undefined && /^[a-z_]+$/.test(value)) {
    ctx.report(node, path, `'${value}' is not a duration or 'until_confirmed'${didYouMean(value, ['until_confirmed'])}`);
    return undefined;
  }
  const ms = readDuration(ctx, node, path, { allowZero: false });
  return ms === undefined ? undefined : { kind: 'duration', ms };
}

function readStatusQuery(scope: ToolScope, node: Node, path: string): StatusQuery | undefined {
  const { ctx } = scope;
  const query = MapReader.of(ctx, node, path);
  if (query === undefined) return undefined;
  const before = ctx.issues.length;
  query.rejectUnknown(STATUS_QUERY_FIELDS);
  const httpNode = query.required('http', ': the GET request that reads the current state');
  const http = httpNode === undefined ? undefined : MapReader.of(ctx, httpNode, query.fieldPath('http'));
  let url: string | undefined;
  let headers: Record<string, string> | undefined = {};
  if (http !== undefined) {
    http.rejectUnknown(STATUS_HTTP_FIELDS, { body: 'a status query is a GET and carries no body' });
    const methodNode = http.optional('method');
    if (methodNode !== undefined) readEnum(ctx, methodNode, http.fieldPath('method'), ['GET'] as const, { caseInsensitive: true });
    const urlNode = http.required('url');
    url = urlNode === undefined ? undefined : checkUrl(scope, urlNode, http.fieldPath('url'));
    const headersNode = http.optional('headers');
    headers = headersNode === undefined ? {} : checkHeaders(scope, headersNode, http.fieldPath('headers'));
  }
  const preconditionNode = query.required('precondition', ': the pointer and value that show the write has not happened');
  const precondition = preconditionNode === undefined ? undefined : MapReader.of(ctx, preconditionNode, query.fieldPath('precondition'));
  let pointer: string | undefined;
  let equals: PreconditionValue | undefined;
  if (precondition !== undefined) {
    precondition.rejectUnknown(PRECONDITION_FIELDS);
    const pointerNode = precondition.required('pointer', ": a JSON pointer into the response body, e.g. '/version'");
    pointer = pointerNode === undefined ? undefined : readString(ctx, pointerNode, precondition.fieldPath('pointer'), { nonEmpty: false });
    if (pointer !== undefined && !/^(\/([^~/]|~[01])*)*$/.test(pointer)) {
      ctx.report(pointerNode, precondition.fieldPath('pointer'), `'${pointer}' is not a JSON pointer; write it like '/version' or '/data/0/etag'`);
    }
    const equalsNode = precondition.value('equals');
    if (equalsNode === undefined) {
      ctx.report(precondition.node, precondition.fieldPath('equals'), "missing required field 'equals': the value, or {{args.<name>}}");
    } else equals = readPreconditionValue(scope, equalsNode, precondition.fieldPath('equals'));
  }
  if (ctx.issues.length > before) return undefined;
  return { http: { method: 'GET', url: known(url), headers: known(headers) }, precondition: { pointer: known(pointer), equals: known(equals) } };
}

function readPreconditionValue(scope: ToolScope, node: Node | null, path: string): PreconditionValue | undefined {
  const value = node === null ? null : scope.ctx.toJS(node);
  if (typeof value !== 'string' || !value.includes('{{')) return { kind: 'literal', value };
  const at = node ?? undefined;
  const scan = at === undefined ? undefined : checkTemplates(scope, at, path, value);
  if (scan === undefined) return undefined;
  const whole = scanTemplates(value).whole;
  if (whole?.kind !== 'argument') {
    scope.ctx.report(at, path, 'must be a literal value or exactly one {{args.<name>}}');
    return undefined;
  }
  return { kind: 'argument', argument: whole.argument };
}

function readMarker(ctx: YamlContext, node: Node, path: string): MarkerProtocol | undefined {
  const marker = MapReader.of(ctx, node, path);
  if (marker === undefined) return undefined;
  const before = ctx.issues.length;
  marker.rejectUnknown(MARKER_FIELDS);
  const scope: ToolScope = { ctx, args: undefined, secrets: new Set() };
  const directoryNode = marker.required('directory', ': the absolute directory on the host that holds markers');
  const directory = directoryNode === undefined ? undefined : checkAbsolutePath(scope, directoryNode, marker.fieldPath('directory'));
  const beforeNode = marker.required('written_before_work', ': true when the marker is written before the work starts');
  const writtenBeforeWork = beforeNode === undefined ? undefined : readBoolean(ctx, beforeNode, marker.fieldPath('written_before_work'));
  const waitNode = marker.optional('started_wait');
  const startedWaitMs = waitNode === undefined ? DEFAULT_MARKER_STARTED_WAIT_MS : readDuration(ctx, waitNode, marker.fieldPath('started_wait'), { allowZero: true });
  if (ctx.issues.length > before) return undefined;
  return { directory: known(directory), writtenBeforeWork: known(writtenBeforeWork), startedWaitMs: known(startedWaitMs) };
}

const SIZE = /^(\d+)\s*(B|KB|KiB|MB|MiB)$/;
const SIZE_UNITS: Readonly<Record<string, number>> = { B: 1, KB: 1_000, KiB: 1_024, MB: 1_000_000, MiB: 1_048_576 };

function readLimits(ctx: YamlContext, node: Node, path: string): ToolLimits | undefined {
  const limits = MapReader.of(ctx, node, path);
  if (limits === undefined) return undefined;
  const before = ctx.issues.length;
  limits.rejectUnknown(LIMITS_FIELDS);
  let responseBytes: number | undefined = DEFAULT_LIMITS.responseBytes;
  const bytesNode = limits.optional('response_bytes');
  if (bytesNode !== undefined) {
    const value = ctx.toJS(bytesNode);
    const size = SIZE.exec(typeof value === 'string' ? value : '');
    responseBytes = typeof value === 'number' ? value : size ? Number(size[1]) * (SIZE_UNITS[size[2] ?? 'B'] ?? 1) : undefined;
    if (responseBytes === undefined || !Number.isInteger(responseBytes) || responseBytes < 1 || responseBytes > MAX_RESPONSE_BYTES) {
      ctx.report(bytesNode, limits.fieldPath('response_bytes'), `must be a size between 1 and 64MiB, as bytes or with a unit (B, KB, KiB, MB, MiB), got ${describeNode(bytesNode)}`);
    }
  }
  const timeout = (field: string, fallback: number): number | undefined => {
    const timeoutNode = limits.optional(field);
    return timeoutNode === undefined ? fallback : readDuration(ctx, timeoutNode, limits.fieldPath(field), { allowZero: false });
  };
  const connectTimeoutMs = timeout('connect_timeout', DEFAULT_LIMITS.connectTimeoutMs);
  const responseTimeoutMs = timeout('response_timeout', DEFAULT_LIMITS.responseTimeoutMs);
  if (ctx.issues.length > before) return undefined;
  return { responseBytes: known(responseBytes), connectTimeoutMs: known(connectTimeoutMs), responseTimeoutMs: known(responseTimeoutMs) };
}
