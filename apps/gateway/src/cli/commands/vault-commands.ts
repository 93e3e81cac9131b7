import type { GatewayConfig } from '@oncegate/service-host/config/gateway-config';
import type { DataFolder } from '@oncegate/service-host/host';
import { lockVault, initVault, removeCredential, storeCredential, unlockVault, vaultStatus, type VaultContext } from '@oncegate/vault';
import {
  CredentialInputError,
  credentialMetadata,
  credentialValue,
  CredentialValueError,
  CREDENTIAL_KINDS,
  type CredentialInput,
} from '@oncegate/vault';
import { VaultKeyError, VaultStateError } from '@oncegate/vault';
import { EXIT_CODES, UsageError, type CliCommand, type CliIo, type ExitCode } from '@oncegate/service-host/cli-command';
import { byOption, parseCommandArgs, stringListOption, stringOption, withDataFolder, type ParsedArguments } from '../command-helpers';

const DEFAULT_BY = 'operator:cli';
const BY_OPTION = { by: { type: 'string' } } as const;

function vaultBy(parsed: ParsedArguments): string {
  return byOption(parsed, DEFAULT_BY);
}

function noPositionals(parsed: ParsedArguments): void {
  if (parsed.positionals.length > 0) throw new UsageError('takes no arguments');
}

/** Opens the data folder and runs `work`; a vault state or master key problem is printed, exit 1. */
function withVault(
  parsed: ParsedArguments,
  io: CliIo,
  work: (context: VaultContext, folder: DataFolder, config: GatewayConfig) => Promise<ExitCode>,
): Promise<ExitCode> {
  const by = vaultBy(parsed);
  return withDataFolder(parsed, io, async (folder, config) => {
    try {
      return await work({ store: folder.store, dataDir: config.dataDir, env: process.env, by }, folder, config);
    } catch (error) {
      if (error instanceof VaultStateError || error instanceof VaultKeyError || error instanceof CredentialValueError) {
        io.stderr(`${error.message}; nothing was changed\n`);
        return EXIT_CODES.failed;
      }
      throw error;
    }
  });
}

export const vaultInitCommand: CliCommand = {
  group: 'vault',
  name: 'init',
  summary: 'Create the credential vault of the data folder (refuses when one exists).',
  usage: `Usage: oncegate vault init [--dev] [--by <name>] [--config <file>]

Makes <data dir>/vault.db with a random data key wrapped under the master key (ONCEGATE_MASTER_KEY, or the
file ONCEGATE_MASTER_KEY_FILE names). With --dev and no master key set, the development master key file in
the data folder is used (made if missing) — for development only. A new vault is unlocked.`,
  async run(args, io) {
    const parsed = parseCommandArgs(args, { dev: { type: 'boolean' }, ...BY_OPTION });
    noPositionals(parsed);
    return withVault(parsed, io, async (context) => {
      const result = await initVault(context, { dev: parsed.values['dev'] === true });
      io.stdout(`${result.recorded ? 'recorded the existing vault' : 'initialised the vault'}: ${context.dataDir}/vault.db (unlocked)\n`);
      if (result.devMasterKeyFile) io.stderr(`the vault uses the development master key ${result.devMasterKeyFile}; do not use it in production\n`);
      return EXIT_CODES.ok;
    });
  },
};

export const vaultUnlockCommand: CliCommand = {
  group: 'vault',
  name: 'unlock',
  summary: 'Unlock the vault: proves the master key opens it, then gateways open their data key again.',
  usage: `Usage: oncegate vault unlock [--by <name>] [--config <file>]

Opens the data key with this process's master key (nothing is appended if it cannot), then records
VaultUnlocked. Each running gateway follows it and opens the data key with its own master key.`,
  async run(args, io) {
    const parsed = parseCommandArgs(args, BY_OPTION);
    noPositionals(parsed);
    return withVault(parsed, io, async (context) => {
      const outcome = await unlockVault(context);
      io.stdout(outcome === 'unlocked' ? `the vault is unlocked (by ${context.by})\n` : 'the vault was already unlocked\n');
      return EXIT_CODES.ok;
    });
  },
};

export const vaultLockCommand: CliCommand = {
  group: 'vault',
  name: 'lock',
  summary: 'Lock the vault: every gateway drops its data key and sends nothing that needs a credential.',
  usage: `Usage: oncegate vault lock [--reason "..."] [--by <name>] [--config <file>]

Records VaultLocked. Running gateways zero-fill and drop the data key; calls that need a credential are
denied (vault_locked) until 'oncegate vault unlock'. The master key stays wherever the operator keeps it.`,
  async run(args, io) {
    const parsed = parseCommandArgs(args, { reason: { type: 'string' }, ...BY_OPTION });
    noPositionals(parsed);
    const reason = stringOption(parsed, 'reason')?.trim() ?? 'locked by an operator';
    if (reason === '') throw new UsageError('--reason must say something');
    return withVault(parsed, io, async (context) => {
      const outcome = await lockVault(context, reason);
      io.stdout(outcome === 'locked' ? `the vault is locked (by ${context.by}: ${reason})\n` : 'the vault was already locked\n');
      return EXIT_CODES.ok;
    });
  },
};

export const vaultStatusCommand: CliCommand = {
  group: 'vault',
  name: 'status',
  summary: 'Show the vault: initialised, locked or unlocked since when and by whom, and its credentials (never values).',
  usage: `Usage: oncegate vault status [--json] [--config <file>]

What the journal says. Each credential: reference, kind, bindings, approval, version. Values are never shown.`,
  async run(args, io) {
    const parsed = parseCommandArgs(args, { json: { type: 'boolean' } });
    noPositionals(parsed);
    return withDataFolder(parsed, io, async (folder, config) => {
      const status = await vaultStatus(folder.store, config.dataDir);
      if (parsed.values['json'] === true) {
        io.stdout(`${JSON.stringify(status, null, 2)}\n`);
        return EXIT_CODES.ok;
      }
      if (!status.initialized) {
        io.stdout(`no vault: ${status.reason}\n`);
        return EXIT_CODES.ok;
      }
      io.stdout(`vault ${status.file}: ${status.locked ? 'locked' : 'unlocked'} since ${status.since} by ${status.by}${status.reason ? ` (${status.reason})` : ''}\n`);
      if (status.credentials.length === 0) io.stdout('no credentials; store one with: oncegate vault set <ref> --kind … --bind …\n');
      for (const c of status.credentials) {
        io.stdout(`${c.ref}\t${c.kind}${c.header ? ` (${c.header}${c.scheme ? ` ${c.scheme}` : ''})` : ''}\tbound to ${c.bindings.join(', ')}\tapproval ${c.approval}\tversion ${c.version}\tstored ${c.storedAt} by ${c.by}\n`);
      }
      return EXIT_CODES.ok;
    });
  },
};

const SET_OPTIONS = {
  kind: { type: 'string' },
  bind: { type: 'string', multiple: true },
  header: { type: 'string' },
  scheme: { type: 'string' },
  username: { type: 'string' },
  approval: { type: 'string' },
  'from-env': { type: 'string' },
  'from-file': { type: 'string' },
  ...BY_OPTION,
} as const;

/** Where the value comes from; a command line is never one (shell history, process lists). */
async function readValue(parsed: ParsedArguments, io: CliIo): Promise<string> {
  const fromEnv = stringOption(parsed, 'from-env');
  const fromFile = stringOption(parsed, 'from-file');
  if (fromEnv !== undefined) {
    // Not echoed unless it looks like a variable name: a value pasted here by mistake must not reach the terminal.
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(fromEnv)) throw new UsageError('--from-env takes the name of an environment variable');
    const value = process.env[fromEnv];
    if (value === undefined) throw new CredentialValueError(`the environment variable ${fromEnv} is not set`);
    return value;
  }
  if (fromFile !== undefined) {
    try {
      return await io.readFile(fromFile);
    } catch (error) {
      throw new CredentialValueError(`cannot read the file --from-file names: ${(error as NodeJS.ErrnoException).code ?? 'unreadable'}`);
    }
  }
  if (io.readStdin === undefined) throw new UsageError('no standard input here: use --from-env or --from-file');
  return io.readStdin();
}

export const vaultSetCommand: CliCommand = {
  group: 'vault',
  name: 'set',
  summary: 'Store a credential (a new version) with its kind and the hosts it may be sent to.',
  usage: `Usage: oncegate vault set <ref> --kind bearer|basic|header|ssh_key|password --bind <host[:port][/path-prefix]> [--bind …]
         [--header <name>] [--scheme <word>] [--username <user>] [--approval none|per_use]
         [--from-env VAR | --from-file PATH] [--by <name>] [--config <file>]

Reads the value from standard input (one trailing line break is dropped), or from the environment variable
or file named. A value is never taken from the command line. Kinds:
  bearer    Authorization: Bearer <value>
  basic     Authorization: Basic base64(<username>:<value>)   (--username required)
  header    <header>: [<scheme> ]<value>                     (--header required, --scheme optional)
  ssh_key   an OpenSSH or PEM private key
  password  a secret a plugin channel logs in with (a database user's password)
A credential is sent only to a target matching one of its bindings (HTTP: host case-insensitive, default port
from the URL scheme, the path prefix by whole segments; SSH: host[:port], default 22; password: host:port).
--approval per_use makes every use wait for an approval. Needs the master key, not an unlocked vault.`,
  async run(args, io) {
    if (args.some((arg) => arg === '--value' || arg.startsWith('--value='))) {
      throw new UsageError('a value is never taken from the command line (shell history, process lists): pipe it to standard input, or use --from-env or --from-file');
    }
    const parsed = parseCommandArgs(args, SET_OPTIONS);
    const [ref, ...rest] = parsed.positionals;
    if (ref === undefined || rest.length > 0) throw new UsageError('name exactly one credential reference');
    const kind = stringOption(parsed, 'kind');
    if (kind === undefined) throw new UsageError(`--kind is required: ${CREDENTIAL_KINDS.join(', ')}`);
    if (stringOption(parsed, 'from-env') !== undefined && stringOption(parsed, 'from-file') !== undefined) {
      throw new UsageError('name one source: --from-env or --from-file (or neither, for standard input)');
    }
    const input: CredentialInput = {
      ref,
      kind,
      bindings: stringListOption(parsed, 'bind'),
      header: stringOption(parsed, 'header'),
      scheme: stringOption(parsed, 'scheme'),
      username: stringOption(parsed, 'username'),
      approval: stringOption(parsed, 'approval'),
    };
    vaultBy(parsed);
    try {
      const checked = credentialMetadata(input, 1);
      const value = credentialValue(checked.kind, await readValue(parsed, io));
      return await withVault(parsed, io, async (context) => {
        const stored = await storeCredential(context, input, value);
        io.stdout(
          `stored '${stored.ref}' version ${stored.version}: ${stored.kind}, bound to ${stored.bindings.join(', ')}, approval ${stored.approval}\n`,
        );
        return EXIT_CODES.ok;
      });
    } catch (error) {
      if (error instanceof CredentialInputError) throw new UsageError(error.reason);
      if (error instanceof CredentialValueError) {
        io.stderr(`${error.reason}; nothing was stored\n`);
        return EXIT_CODES.failed;
      }
      throw error;
    }
  },
};

export const vaultRemoveCommand: CliCommand = {
  group: 'vault',
  name: 'rm',
  summary: 'Remove a credential; tools that name it are denied (credential_unresolved) from then on.',
  usage: 'Usage: oncegate vault rm <ref> [--by <name>] [--config <file>]',
  async run(args, io) {
    const parsed = parseCommandArgs(args, BY_OPTION);
    const [ref, ...rest] = parsed.positionals;
    if (ref === undefined || rest.length > 0) throw new UsageError('name exactly one credential reference');
    return withVault(parsed, io, async (context) => {
      const version = await removeCredential(context, ref);
      io.stdout(`removed '${ref}' (version ${version})\n`);
      return EXIT_CODES.ok;
    });
  },
};

/** Every `oncegate vault …` command. */
export const VAULT_COMMANDS: readonly CliCommand[] = [
  vaultInitCommand,
  vaultUnlockCommand,
  vaultLockCommand,
  vaultStatusCommand,
  vaultSetCommand,
  vaultRemoveCommand,
];
