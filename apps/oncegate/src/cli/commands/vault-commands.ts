import { Command, Option } from '@commander-js/extra-typings';
import type { GatewayConfig } from '@oncegate/host-config';
import { action, EXIT_CODES, UsageError, type CliIo, type ExitCode } from '@oncegate/host-cli';
import type { DataFolder } from '@oncegate/service-host';
import { lockVault, initVault, removeCredential, storeCredential, unlockVault, vaultStatus, type VaultContext } from '@oncegate/vault';
import {
  CREDENTIAL_APPROVALS,
  CredentialInputError,
  credentialMetadata,
  credentialValue,
  CredentialValueError,
  CREDENTIAL_KINDS,
  type CredentialInput,
} from '@oncegate/vault';
import { VaultKeyError, VaultStateError } from '@oncegate/vault';
import { actingAs, byOption, configOption, jsonOption, withDataFolder } from '../command-helpers';

const DEFAULT_BY = 'operator:cli';

/** Opens the data folder and runs `work` as `by`; a vault state or master key problem is printed, exit 1. */
function withVault(
  options: { readonly config?: string | undefined; readonly by: string },
  io: CliIo,
  work: (context: VaultContext, folder: DataFolder, config: GatewayConfig) => Promise<ExitCode>,
): Promise<ExitCode> {
  const by = actingAs(options.by);
  return withDataFolder(options, io, async (folder, config) => {
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

function initCommand() {
  return new Command('init')
    .summary('Create the credential vault of the data folder (refuses when one exists).')
    .description(
      'Makes <data dir>/vault.db with a random data key wrapped under the master key (ONCEGATE_MASTER_KEY, or the file ' +
        'ONCEGATE_MASTER_KEY_FILE names). A new vault is unlocked. Refused when a vault exists.',
    )
    .option('--dev', 'with no master key set, use the development master key file of the data folder (made if missing); development only')
    .addOption(byOption(DEFAULT_BY))
    .addOption(configOption())
    .action(
      action((io, options) =>
        withVault(options, io, async (context) => {
          const result = await initVault(context, { dev: options.dev === true });
          io.stdout(`${result.recorded ? 'recorded the existing vault' : 'initialised the vault'}: ${context.dataDir}/vault.db (unlocked)\n`);
          if (result.devMasterKeyFile) io.stderr(`the vault uses the development master key ${result.devMasterKeyFile}; do not use it in production\n`);
          return EXIT_CODES.ok;
        }),
      ),
    );
}

function unlockCommand() {
  return new Command('unlock')
    .summary('Unlock the vault: proves the master key opens it, then gateways open their data key again.')
    .description(
      "Opens the data key with this process's master key (nothing is appended if it cannot), then records VaultUnlocked. Each " +
        'running gateway follows it and opens the data key with its own master key.',
    )
    .addOption(byOption(DEFAULT_BY))
    .addOption(configOption())
    .action(
      action((io, options) =>
        withVault(options, io, async (context) => {
          const outcome = await unlockVault(context);
          io.stdout(outcome === 'unlocked' ? `the vault is unlocked (by ${context.by})\n` : 'the vault was already unlocked\n');
          return EXIT_CODES.ok;
        }),
      ),
    );
}

function lockCommand() {
  return new Command('lock')
    .summary('Lock the vault: every gateway drops its data key and sends nothing that needs a credential.')
    .description(
      'Records VaultLocked. Running gateways zero-fill and drop the data key; calls that need a credential are denied (vault_locked) ' +
        "until 'oncegate vault unlock'. The master key stays wherever the operator keeps it.",
    )
    .addOption(new Option('--reason <text>', 'why, recorded with the lock').default('locked by an operator'))
    .addOption(byOption(DEFAULT_BY))
    .addOption(configOption())
    .action(
      action((io, options) => {
        const reason = options.reason.trim();
        if (reason === '') throw new UsageError('--reason must say something');
        return withVault(options, io, async (context) => {
          const outcome = await lockVault(context, reason);
          io.stdout(outcome === 'locked' ? `the vault is locked (by ${context.by}: ${reason})\n` : 'the vault was already locked\n');
          return EXIT_CODES.ok;
        });
      }),
    );
}

function statusCommand() {
  return new Command('status')
    .summary('Show the vault: initialised, locked or unlocked since when and by whom, and its credentials (never values).')
    .description(
      'Shows what the journal says of the vault: initialised, locked or unlocked since when and by whom. Each credential: reference, ' +
        'kind, bindings, approval, version. Values are never shown.',
    )
    .addOption(jsonOption())
    .addOption(configOption())
    .action(
      action((io, options) =>
        withDataFolder(options, io, async (folder, config) => {
          const status = await vaultStatus(folder.store, config.dataDir);
          if (options.json === true) {
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
        }),
      ),
    );
}

/** Where the value comes from; a command line is never one (shell history, process lists). */
async function readValue(options: { readonly fromEnv?: string | undefined; readonly fromFile?: string | undefined }, io: CliIo): Promise<string> {
  const { fromEnv, fromFile } = options;
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

function setCommand() {
  return (
    new Command('set')
      .summary('Store a credential (a new version) with its kind and the hosts it may be sent to.')
      .description(
        'Stores a credential as a new version. Reads the value from standard input (one trailing line break is dropped), or from the ' +
          'environment variable or file named. A value is never taken from the command line. Needs the master key, not an unlocked ' +
          'vault.\n\n' +
          'Kinds:\n' +
          '  bearer    Authorization: Bearer <value>\n' +
          '  basic     Authorization: Basic base64(<username>:<value>); needs --username\n' +
          '  header    <header>: [<scheme> ]<value>; needs --header, --scheme optional\n' +
          '  ssh_key   an OpenSSH or PEM private key\n' +
          "  password  a secret a plugin channel logs in with (a database user's password)\n\n" +
          'A credential is sent only to a target matching one of its bindings (HTTP: host case-insensitive, default port from the URL ' +
          'scheme, the path prefix by whole segments; SSH: host[:port], default 22; password: host:port).',
      )
      .argument('<ref>', 'the reference contracts name it by (credential_ref)')
      .addOption(new Option('--kind <kind>', 'how the value is sent').choices(CREDENTIAL_KINDS).makeOptionMandatory())
      .addOption(
        new Option('--bind <host[:port][/path-prefix]>', 'a target it may be sent to; repeat for more').argParser((value, previous: string[] | undefined) => [
          ...(previous ?? []),
          value,
        ]),
      )
      .option('--header <name>', 'the header a header credential goes in')
      .option('--scheme <word>', "a word before a header credential's value")
      .option('--username <user>', 'the user name of a basic credential')
      .addOption(new Option('--approval <requirement>', 'per_use makes every use wait for an approval').choices(CREDENTIAL_APPROVALS).default('none'))
      .addOption(new Option('--from-env <VARIABLE>', 'read the value from this environment variable').conflicts('fromFile'))
      .option('--from-file <path>', 'read the value from this file')
      // Known, so that `--value=…` is refused below without repeating it, instead of echoed as an unknown option.
      .addOption(new Option('--value <value>').hideHelp())
      .addOption(byOption(DEFAULT_BY))
      .addOption(configOption())
      .action(
        action(async (io, ref, options) => {
          if (options.value !== undefined) {
            throw new UsageError('a value is never taken from the command line (shell history, process lists): pipe it to standard input, or use --from-env or --from-file');
          }
          const input: CredentialInput = {
            ref,
            kind: options.kind,
            bindings: options.bind ?? [],
            header: options.header,
            scheme: options.scheme,
            username: options.username,
            approval: options.approval,
          };
          actingAs(options.by);
          try {
            const checked = credentialMetadata(input, 1);
            const value = credentialValue(checked.kind, await readValue(options, io));
            return await withVault(options, io, async (context) => {
              const stored = await storeCredential(context, input, value);
              io.stdout(`stored '${stored.ref}' version ${stored.version}: ${stored.kind}, bound to ${stored.bindings.join(', ')}, approval ${stored.approval}\n`);
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
        }),
      )
  );
}

function removeCommand() {
  return new Command('rm')
    .summary('Remove a credential; tools that name it are denied (credential_unresolved) from then on.')
    .argument('<ref>', 'the credential to remove')
    .addOption(byOption(DEFAULT_BY))
    .addOption(configOption())
    .action(
      action((io, ref, options) =>
        withVault(options, io, async (context) => {
          const version = await removeCredential(context, ref);
          io.stdout(`removed '${ref}' (version ${version})\n`);
          return EXIT_CODES.ok;
        }),
      ),
    );
}

/** `oncegate vault …`: the credential vault of the data folder. */
export function vaultCommand() {
  return new Command('vault')
    .description('The credential vault of the data folder: credentials by reference, sent only to the hosts they are bound to.')
    .addCommand(initCommand())
    .addCommand(unlockCommand())
    .addCommand(lockCommand())
    .addCommand(statusCommand())
    .addCommand(setCommand())
    .addCommand(removeCommand());
}
