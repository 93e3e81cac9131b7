import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from '@commander-js/extra-typings';
import { parse } from 'yaml';
import { checkContractFile, formatIssue, isCredentialRef, pluginServerOf } from '@oncegate/contracts';
import { OPERATION_CLASSES } from '@oncegate/domain';
import { loadGatewayConfig } from '@oncegate/host-config';
import { VaultService } from '@oncegate/host-vault';
import { action, EXIT_CODES, UsageError, type CliIo, type ExitCode } from '@oncegate/host-cli';
import { openDataFolder } from '@oncegate/service-host';
import {
  acceptUpstream,
  differs,
  diffUpstream,
  formatUpstreamDiff,
  isUpstreamClass,
  readContractFileTools,
  UnknownUpstreamToolError,
  UPSTREAM_CLASSES,
  upstreamContractFile,
  UpstreamContractError,
  type ContractFileTools,
  type UpstreamClass,
  type UpstreamContract,
  type UpstreamEndpoint,
  type WrittenUpstreamTool,
} from '@oncegate/upstream-contracts';
import { configOption } from '../command-helpers';
import { listUpstreamTools, UpstreamUnavailableError, type UpstreamListing, type UpstreamReach } from './upstream-listing';

/** An upstream's name, as the `mcp` channel's section takes it: the prefix of its tools and their target `mcp/<name>`. */
const UPSTREAM_NAME = /^[a-z][a-z0-9-]*$/;

/** diff's exit code when the comparison could not be made: 1 is taken by "something differs". */
const CANNOT_COMPARE: ExitCode = 2;

function upstreamName(name: string): string {
  if (!UPSTREAM_NAME.test(name)) throw new UsageError(`'${name.slice(0, 64)}' is not an upstream name: a lower-case letter, then lower-case letters, digits or '-' (e.g. github, ticket-desk)`);
  return name;
}

/** `--class tool=class`, each checked; the classes an MCP tool cannot have are refused with the reason. */
function classOverrides(given: readonly string[]): Map<string, UpstreamClass> {
  const classes = new Map<string, UpstreamClass>();
  for (const text of given) {
    const at = text.lastIndexOf('=');
    const tool = text.slice(0, at);
    const operationClass = text.slice(at + 1);
    if (at <= 0) throw new UsageError(`--class '${text}': write <tool>=<class>, e.g. --class close_ticket=irreversible`);
    if (!isUpstreamClass(operationClass)) {
      const why = (OPERATION_CLASSES as readonly string[]).includes(operationClass)
        ? `${operationClass} needs a status query or a marker on the target, which an MCP server does not offer`
        : `not a class`;
      throw new UsageError(`--class ${text}: ${why}; an upstream tool is ${UPSTREAM_CLASSES.join(', ')}`);
    }
    classes.set(tool, operationClass);
  }
  return classes;
}

/** `--env NAME=VALUE`, for the stdio command. */
function environment(given: readonly string[]): Record<string, string> | undefined {
  if (given.length === 0) return undefined;
  const env: Record<string, string> = {};
  for (const text of given) {
    const at = text.indexOf('=');
    // The value is not repeated: it may be a secret put in the wrong place.
    if (at <= 0 || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(text.slice(0, at))) throw new UsageError(`--env '${text.slice(0, Math.max(at, 0)).slice(0, 64)}…': write NAME=VALUE`);
    env[text.slice(0, at)] = text.slice(at + 1);
  }
  return env;
}

/** `--url`: an absolute http(s) URL without user info (credentials come from the vault, by `--credential`). */
function upstreamUrl(text: string): string {
  if (!URL.canParse(text)) throw new UsageError('--url is not a URL; write e.g. --url https://mcp.example.com/mcp');
  const url = new URL(text);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--url must be http:// or https:// (Streamable HTTP), not ${url.protocol}`);
  if (url.username !== '' || url.password !== '') throw new UsageError('--url carries user info (user:password@): credentials come from the vault, named by --credential <ref>');
  return text;
}

/** `host:port` a credential of the upstream is bound to, as `oncegate vault set --bind` takes it. */
function bindingOf(url: string): string {
  const server = pluginServerOf({ kind: 'plugin', channel: 'mcp', config: { url } })!;
  return `${server.host.includes(':') ? `[${server.host}]` : server.host}:${server.port}`;
}

/**
 * The headers of the vault credential `ref` for `url`, as the channel will send them, when the configuration's vault
 * holds one bound there; otherwise why not, and the listing goes without. The value is never printed.
 */
async function vaultCredential(ref: string, url: string, config: string | undefined): Promise<{ headers: Record<string, string> } | { unused: string }> {
  let folder;
  let vault: VaultService | undefined;
  try {
    const loaded = loadGatewayConfig(config === undefined ? {} : { file: config });
    if (!existsSync(loaded.dataDir)) return { unused: `no data folder at ${loaded.dataDir}` };
    folder = await openDataFolder(loaded, { readOnly: true });
    vault = new VaultService({ store: folder.store, dataDir: loaded.dataDir });
    await vault.start();
    // The mcp channel takes a password credential and sends it as a bearer token (docs/dispatchers.md, the MCP
    // channel): the listing reads it the same way, bound to the url's host and port.
    const server = pluginServerOf({ kind: 'plugin', channel: 'mcp', config: { url } })!;
    const secret = await vault.secret(ref, server.host, server.port);
    try {
      return { headers: { Authorization: `Bearer ${secret.toString('utf8')}` } };
    } finally {
      secret.fill(0);
    }
  } catch (error) {
    return { unused: error instanceof Error ? error.message : String(error) };
  } finally {
    await vault?.stop();
    await folder?.close();
  }
}

/** The tools of an upstream, or the reason (printed) and the exit code. */
async function listingOrExit(reach: UpstreamReach, io: CliIo, failed: ExitCode, hint: (error: UpstreamUnavailableError) => string): Promise<UpstreamListing | ExitCode> {
  try {
    return await listUpstreamTools(reach);
  } catch (error) {
    if (!(error instanceof UpstreamUnavailableError)) throw error;
    io.stderr(`${error.message}${hint(error)}\n`);
    return failed;
  }
}

/** Writes `text` to `file`: refused when it exists unless `replace`, then in one rename so no reader sees half a file. */
function writeContract(file: string, text: string, replace: boolean): void {
  if (!replace) {
    writeFileSync(file, text, { flag: 'wx' });
    return;
  }
  const partial = `${file}.${process.pid}.partial`;
  try {
    writeFileSync(partial, text);
    renameSync(partial, file);
  } finally {
    rmSync(partial, { force: true });
  }
}

/**
 * The contract file's JSON Schema as this installation has it (schemas/tools.schema.json, a few folders above this
 * module whether it runs compiled or from its sources), relative to the folder of `out`; `undefined` when not found.
 */
function schemaPathFor(out: string): string | undefined {
  for (let dir = dirname(fileURLToPath(import.meta.url)), up = 0; up < 8; dir = dirname(dir), up += 1) {
    const schema = join(dir, 'schemas', 'tools.schema.json');
    if (existsSync(schema)) return relative(dirname(resolve(out)), schema).split(sep).join('/');
  }
  return undefined;
}

/** `upstream-desk.yaml` as a path shown from the working directory. */
const shown = (file: string) => relative(process.cwd(), resolve(file)) || file;

/** The lines after `add` wrote its file: the tools by class, what was left out, the credential, how to serve them. */
function addSummary(name: string, out: string, listing: UpstreamListing, contract: UpstreamContract, credential: { ref: string; url: string; unused?: string } | undefined, config: string | undefined): string[] {
  const about = [listing.server, listing.protocolVersion === undefined ? undefined : `MCP ${listing.protocolVersion}`].filter((part) => part !== undefined).join(', ');
  const lines = [`wrote ${shown(out)}: ${contract.written.length} tool${contract.written.length === 1 ? '' : 's'} of ${name}${about === '' ? '' : ` (${about})`}`];
  for (const operationClass of UPSTREAM_CLASSES) {
    const tools = contract.written.filter((tool) => tool.operationClass === operationClass);
    if (tools.length > 0) lines.push(`  ${operationClass} ${tools.length}: ${tools.map((tool) => `${tool.name}${tool.overridden ? ' (--class)' : ''}`).join(', ')}`);
  }
  if (contract.leftOut.length > 0) {
    lines.push(`left out ${contract.leftOut.length}: the contract format refuses them (fix the upstream's definition, or write the entry by hand)`);
    for (const tool of contract.leftOut) lines.push(...tool.reasons.map((reason) => `  ${tool.upstreamTool}: ${reason}`));
  }
  if (credential !== undefined) {
    if (credential.unused === undefined) lines.push(`credential: '${credential.ref}' from the vault (it was used for this listing too)`);
    else {
      lines.push(
        `credential: the gateway sends '${credential.ref}' from the vault to ${bindingOf(credential.url)} (not used for this listing: ${credential.unused}); ` +
          'store it there once (the value from stdin, --from-env or --from-file):',
        `  oncegate vault set ${credential.ref} --kind password --bind ${bindingOf(credential.url)} --from-env <VARIABLE>`,
      );
    }
  }
  lines.push(...includeHint(out, config), `review it (classes, windows, approval: per_use where a person should decide), then: oncegate upstream diff ${name} tells when the server changes`);
  return lines;
}

/** The files a contract file's `include:` names, resolved; none when it cannot be read. */
function includes(file: string): string[] {
  try {
    const include = (parse(readFileSync(file, 'utf8')) as { include?: unknown } | null)?.include;
    return Array.isArray(include) ? include.filter((entry): entry is string => typeof entry === 'string').map((entry) => resolve(dirname(file), entry)) : [];
  } catch {
    return [];
  }
}

/** How to serve the file's tools: the configuration's contract file includes it. */
function includeHint(out: string, config: string | undefined): string[] {
  let contracts: string | undefined;
  try {
    contracts = loadGatewayConfig(config === undefined ? {} : { file: config }).contractsFile;
  } catch {
    contracts = undefined;
  }
  // Without a configuration here, the default contract file may not exist: then no file is named.
  if (contracts !== undefined && !existsSync(contracts) && config === undefined) contracts = undefined;
  if (contracts !== undefined && resolve(contracts) === resolve(out)) return ['serve it: it is the contract file of the configuration; restart the gateway'];
  if (contracts !== undefined && includes(contracts).includes(resolve(out))) return [`serve it: ${shown(contracts)} includes it already; restart the gateway`];
  const entry = contracts === undefined ? shown(out) : relative(dirname(contracts), resolve(out));
  const into = contracts === undefined ? 'your contract file (contracts: in oncegate.yaml)' : shown(contracts);
  return [`serve it: add   include: [${entry}]   to ${into}, check it with oncegate contracts check ${contracts === undefined ? '<that file>' : shown(contracts)}, and restart the gateway`];
}

interface AddOptions {
  readonly url?: string;
  readonly command?: string[];
  readonly env: string[];
  readonly cwd?: string;
  readonly out?: string;
  readonly force?: true;
  readonly class: string[];
  readonly only?: string[];
  readonly credential?: string;
  readonly config?: string;
}

async function add(givenName: string, operands: readonly string[], options: AddOptions, io: CliIo): Promise<ExitCode> {
  const name = upstreamName(givenName);
  const command = [...(options.command ?? []), ...operands];
  if ((options.url === undefined) === (command.length === 0)) throw new UsageError('name the upstream by --url <Streamable HTTP URL> or by its command (--command <cmd> [args...], or after --), one of the two');
  if (options.url !== undefined && (options.env.length > 0 || options.cwd !== undefined)) throw new UsageError('--env and --cwd are for a command the channel starts, not for --url');
  if (options.credential !== undefined && options.url === undefined) throw new UsageError('--credential is bound to the host of a --url upstream; a stdio command takes none');
  if (options.credential !== undefined && !isCredentialRef(options.credential)) throw new UsageError(`--credential '${options.credential.slice(0, 64)}' is not a credential name (letters, digits, '_', '.', ':', '/', '-')`);
  const url = options.url === undefined ? undefined : upstreamUrl(options.url);
  const env = environment(options.env);
  const classes = classOverrides(options.class);
  const out = options.out ?? `upstream-${name}.yaml`;
  // Before connecting: a refusal costs nothing.
  if (existsSync(out) && options.force !== true) {
    io.stderr(`${shown(out)} exists: nothing was written (--force replaces it; oncegate upstream diff ${name} --contracts ${shown(out)} compares it with the server)\n`);
    return EXIT_CODES.failed;
  }
  const endpoint: UpstreamEndpoint = url !== undefined ? { url } : { command, ...(env ? { env } : {}), ...(options.cwd ? { cwd: options.cwd } : {}) };

  let credential: { ref: string; url: string; unused?: string } | undefined;
  let headers: Record<string, string> | undefined;
  if (options.credential !== undefined && url !== undefined) {
    const found = await vaultCredential(options.credential, url, options.config);
    if ('headers' in found) headers = found.headers;
    credential = { ref: options.credential, url, ...('unused' in found ? { unused: found.unused } : {}) };
  }
  const reach: UpstreamReach = url !== undefined ? { url, ...(headers ? { headers } : {}) } : { command, ...(env ? { env } : {}), ...(options.cwd ? { cwd: options.cwd } : {}) };
  const listing = await listingOrExit(reach, io, EXIT_CODES.failed, (error) => {
    if (error.status !== 401 && error.status !== 403) return '';
    if (options.credential === undefined) return '; name its vault credential with --credential <ref>';
    return `; store '${options.credential}' in the vault first: oncegate vault set ${options.credential} --kind password --bind ${bindingOf(url!)} --from-env <VARIABLE>`;
  });
  if (typeof listing === 'number') return listing;

  let contract: UpstreamContract;
  try {
    contract = upstreamContractFile({
      upstream: name,
      endpoint,
      ...(options.credential === undefined ? {} : { credentialRef: options.credential }),
      listing: listing.tools,
      classes,
      ...(options.only === undefined ? {} : { only: options.only }),
      file: out,
      ...(schemaPathFor(out) === undefined ? {} : { schemaPath: schemaPathFor(out)! }),
      origin: {
        source: url ?? command.join(' '),
        ...(listing.server === undefined ? {} : { server: listing.server }),
        ...(listing.protocolVersion === undefined ? {} : { protocolVersion: listing.protocolVersion }),
        writtenAt: new Date().toISOString(),
      },
    });
  } catch (error) {
    if (error instanceof UnknownUpstreamToolError) throw new UsageError(error.message);
    if (!(error instanceof UpstreamContractError)) throw error;
    io.stderr(`${error.message}; nothing was written\n`);
    for (const tool of error.tools) for (const reason of tool.reasons) io.stderr(`  ${tool.upstreamTool}: ${reason}\n`);
    return EXIT_CODES.failed;
  }
  try {
    writeContract(out, contract.text, options.force === true);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    io.stderr(`cannot write ${shown(out)}: ${code === 'EEXIST' ? 'it exists (--force replaces it)' : code === 'ENOENT' ? 'no such folder' : (error as Error).message}\n`);
    return EXIT_CODES.failed;
  }
  io.stdout(`${addSummary(name, out, listing, contract, credential, options.config).join('\n')}\n`);
  return EXIT_CODES.ok;
}

/** The contract file and the files it includes, each read for the upstream's tools; or the reason and the exit code. */
function contractFilesOrExit(file: string, upstream: string, io: CliIo, failed: ExitCode): ContractFileTools[] | ExitCode {
  const files: ContractFileTools[] = [];
  const pending = [file];
  const seen = new Set<string>();
  while (pending.length > 0) {
    const next = pending.shift()!;
    if (seen.has(resolve(next))) continue;
    seen.add(resolve(next));
    try {
      const read = readContractFileTools(readFileSync(next, 'utf8'), next, upstream);
      files.push(read);
      pending.push(...read.includes);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') io.stderr(`${next}: no such file${next === file ? ` (--contracts names the contract file that holds ${upstream}'s tools)` : ''}\n`);
      else if (error instanceof UpstreamContractError) io.stderr(`${error.message}\n`);
      else throw error;
      return failed;
    }
  }
  if (files.every((each) => each.upstreamTools.length === 0)) {
    io.stderr(`${file}${files.length > 1 ? ' and the files it includes' : ''}: no tool of the upstream '${upstream}' (channel: mcp, plugin.upstream: ${upstream})\n`);
    return failed;
  }
  return files;
}

/** How to reach the upstream again, as its first entry's section says, with the vault credential it names. */
async function reachOf(entry: WrittenUpstreamTool, config: string | undefined): Promise<{ reach: UpstreamReach; note?: string }> {
  const { url, command, env, cwd } = entry.section as { url?: unknown; command?: unknown; env?: Record<string, string>; cwd?: string };
  if (typeof url === 'string') {
    if (entry.credentialRef === undefined) return { reach: { url } };
    const found = await vaultCredential(entry.credentialRef, url, config);
    if ('headers' in found) return { reach: { url, headers: found.headers } };
    return { reach: { url }, note: `credential '${entry.credentialRef}' not used for the listing: ${found.unused}` };
  }
  if (!Array.isArray(command) || command.length === 0) throw new UpstreamContractError(`${entry.file}: ${entry.name} says neither plugin.url nor plugin.command: the upstream cannot be reached`, []);
  return { reach: { command: command.map(String), ...(env ? { env } : {}), ...(cwd ? { cwd } : {}) } };
}

/** Reads the contract, lists the upstream's live tools; what diff and accept both start from. */
async function liveAndWritten(
  upstream: string,
  options: { readonly contracts?: string; readonly config?: string },
  io: CliIo,
  failed: ExitCode,
): Promise<{ files: ContractFileTools[]; listing: UpstreamListing; contracts: string } | ExitCode> {
  const contracts = options.contracts ?? `upstream-${upstream}.yaml`;
  const files = contractFilesOrExit(contracts, upstream, io, failed);
  if (typeof files === 'number') return files;
  let reached;
  try {
    reached = await reachOf(files.flatMap((file) => file.upstreamTools)[0]!, options.config);
  } catch (error) {
    if (!(error instanceof UpstreamContractError)) throw error;
    io.stderr(`${error.message}\n`);
    return failed;
  }
  if (reached.note !== undefined) io.stderr(`${reached.note}\n`);
  const listing = await listingOrExit(reached.reach, io, failed, () => '');
  if (typeof listing === 'number') return listing;
  return { files, listing, contracts };
}

async function diff(givenName: string, options: { readonly contracts?: string; readonly config?: string }, io: CliIo): Promise<ExitCode> {
  const name = upstreamName(givenName);
  const read = await liveAndWritten(name, options, io, CANNOT_COMPARE);
  if (typeof read === 'number') return read;
  const written = read.files.flatMap((file) => file.upstreamTools);
  const result = diffUpstream(read.listing.tools, written);
  const lines = formatUpstreamDiff(result, name);
  if (differs(result)) {
    io.stdout(`${lines.join('\n')}\n`);
    return EXIT_CODES.failed;
  }
  // What the contract format refuses is said, but it is no difference: nothing could be accepted for it.
  for (const line of lines) io.stdout(`${line}\n`);
  io.stdout(`${shown(read.contracts)}: the ${written.length} tool${written.length === 1 ? '' : 's'} of ${name} match the live server (${read.listing.tools.length} listed)\n`);
  return EXIT_CODES.ok;
}

interface AcceptOptions {
  readonly contracts?: string;
  readonly config?: string;
  readonly tool?: string[];
  readonly add?: true;
  readonly remove?: true;
}

async function accept(givenName: string, options: AcceptOptions, io: CliIo): Promise<ExitCode> {
  const name = upstreamName(givenName);
  const read = await liveAndWritten(name, options, io, EXIT_CODES.failed);
  if (typeof read === 'number') return read;
  let result;
  try {
    result = acceptUpstream({
      upstream: name,
      live: read.listing.tools,
      files: read.files,
      ...(options.tool === undefined ? {} : { tools: options.tool }),
      add: options.add === true,
      remove: options.remove === true,
    });
  } catch (error) {
    if (error instanceof UnknownUpstreamToolError) throw new UsageError(error.message);
    if (!(error instanceof UpstreamContractError)) throw error;
    io.stderr(`${error.message}; nothing was written\n`);
    return EXIT_CODES.failed;
  }
  // Every file changed must still be a contract the gateway takes, or none is written.
  const refusals = [...result.texts].flatMap(([file, text]) => {
    const checked = checkContractFile(text, file, { readIncluded: (included) => readFileSync(included, 'utf8') });
    return checked.ok ? [] : checked.issues.map(formatIssue);
  });
  if (refusals.length > 0) {
    io.stderr(`accepting would leave a contract the gateway refuses; nothing was written (change these by hand, then accept again):\n${refusals.map((line) => `  ${line}`).join('\n')}\n`);
    return EXIT_CODES.failed;
  }
  for (const [file, text] of result.texts) writeContract(file, text, true);
  if (result.lines.length === 0) io.stdout(`${shown(read.contracts)}: nothing to accept; the tools of ${name} match the live server\n`);
  else io.stdout(`${result.lines.join('\n')}\n`);
  return EXIT_CODES.ok;
}

/** `oncegate upstream add | diff | accept`: contracts for the tools of an upstream MCP server. */
export function upstreamCommand(): Command {
  const addCommand = new Command('add')
    .summary("Write a contract file for the tools of an upstream MCP server (its tools on channel mcp).")
    .description(
      "Connects to an upstream MCP server with the official client (Streamable HTTP at --url, or a stdio command it starts and " +
        'stops), reads every page of its tools/list, and writes a contract file (docs/contracts.md) with one tool per upstream tool: ' +
        "named <name>_<tool>, its input schema as the upstream gives it, its class from the annotations (readOnlyHint: read_only, " +
        'idempotentHint: idempotent_write, otherwise irreversible; --class overrides), target mcp/<name>, and the mcp channel\'s ' +
        'section with the digest of its definition. A tool the contract format refuses is left out and named. Then prints the ' +
        'tools by class, the vault line for --credential, and how to include the file.' +
        '\n\nA command whose arguments start with - goes after --: oncegate upstream add files -- npx -y @scope/server /srv' +
        '\n\nExit codes: 0 written, 1 the upstream could not be listed, no tool can be written, or the file exists, 2 usage error.',
    )
    .argument('<name>', 'the upstream\'s name: the prefix of its tools\' names and their target mcp/<name> (lower case, digits, -)')
    .argument('[command...]', 'after --: the stdio command and its arguments')
    .option('--url <url>', 'the Streamable HTTP endpoint of the upstream (2026-07-28 negotiated where offered, else 2025-11-25)')
    .option('--command <argv...>', 'the stdio upstream: the command and its arguments, started for the listing and stopped after')
    .option('--env <NAME=VALUE...>', 'an environment variable of the stdio command (added to a minimal environment), written into the file', [] as string[])
    .option('--cwd <dir>', 'the working directory of the stdio command, written into the file')
    .option('--out <file>', 'the contract file to write (default: upstream-<name>.yaml)')
    .option('--force', 'replace the file when it exists')
    .option('--class <tool=class...>', `a tool's class instead of its annotations' (${UPSTREAM_CLASSES.join(', ')}); marked as an override, which accept keeps`, [] as string[])
    .option('--only <tool...>', 'write only these upstream tools')
    .option('--credential <ref>', "the vault credential the gateway sends to a --url upstream (credential_ref); used for the listing too when the vault holds it")
    .addOption(configOption())
    .action(action((io, name, command, options) => add(name, command, options, io)));
  const contractsOption = ['--contracts <file>', "the contract file that holds the upstream's tools, with the files it includes (default: upstream-<name>.yaml)"] as const;
  const diffCommand = new Command('diff')
    .summary("Compare an upstream's live tools with its contract file: added, removed and changed tools.")
    .description(
      "Connects to the upstream again (as its tools' plugin section says) and compares its live tools, tool by tool, with the contract's " +
        'tools of that upstream: tools added and removed, and tools whose definition digest differs, with a readable diff of their ' +
        'input schema and annotations and the class the new annotations give.' +
        '\n\nExit codes: 0 nothing differs, 1 something differs, 2 usage error, or the comparison could not be made.',
    )
    .argument('<name>', "the upstream's name, as its tools' plugin.upstream says")
    .option(...contractsOption)
    .addOption(configOption())
    .action(action((io, name, options) => diff(name, options, io)));
  const acceptCommand = new Command('accept')
    .summary("Rewrite an upstream's contract entries to its live definitions, keeping comments and override classes.")
    .description(
      "Rewrites the contract's tools of the upstream whose definitions changed: their input schema and definition digest, and their " +
        "class (with a correlation window still at the old class's default) unless the class is marked as an override. New tools are " +
        'added only with --add and entries of tools the upstream no longer lists are removed only with --remove. The rest of each ' +
        'file is kept as written, comments included, and nothing is written unless every changed file still passes the check.' +
        '\n\nExit codes: 0 accepted (or nothing to accept), 1 the upstream could not be listed or the result would be refused, 2 usage error.',
    )
    .argument('<name>', "the upstream's name, as its tools' plugin.upstream says")
    .option(...contractsOption)
    .option('--tool <tool...>', 'accept only these tools (upstream or Oncegate names)')
    .option('--add', 'add the tools the upstream lists that the contract does not have')
    .option('--remove', 'remove the entries of tools the upstream no longer lists')
    .addOption(configOption())
    .action(action((io, name, options) => accept(name, options, io)));
  return new Command('upstream')
    .description('Upstream MCP servers behind the gateway (docs/contracts.md): add, diff, accept their contract files.')
    .addCommand(addCommand)
    .addCommand(diffCommand)
    .addCommand(acceptCommand);
}
