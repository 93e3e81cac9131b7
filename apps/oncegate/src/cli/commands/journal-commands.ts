import { existsSync } from 'node:fs';
import { EventStoreOpenError, EventStoreUnavailableError, readAllFrom } from '@oncegate/event-store';
import { formatEventLine, formatHeader, publicKeyId, verifyJournalFile, type VerifyReport } from '@oncegate/journal';
import { KeyFileError, loadGatewayKeys } from '@oncegate/host-vault';
import { initSealKeys, loadSealPublicKey, SealKeyError, sealKeyPaths } from '@oncegate/vault';
import { Command, Option } from '@commander-js/extra-typings';
import { action, EXIT_CODES, UsageError, type CliIo, type ExitCode } from '@oncegate/host-cli';
import { createStoreDatabase, openDataFolder, storeLocation, type DataFolder } from '@oncegate/service-host';
import type { GatewayConfig } from '@oncegate/host-config';
import { configOption, configOrExit, wholeNumber, withDataFolder } from '../command-helpers';

/** Events read per page by `journal export`, and lines written to stdout at once. */
const EXPORT_CHUNK = 1000;

/** A global position of the journal, for `--from` and `--to`. */
const position = wholeNumber(0);

export function initCommand() {
  return new Command('init')
    .summary('Create the data folder, its keys and the journal signing key pair, and prepare the store.')
    .description(
      'Opens the configured store, making its schema (PostgreSQL) or its file (SQLite), and refuses, naming it, a ' +
        'database the PostgreSQL server does not have, unless --create-database. Then creates the data folder\'s keys and the ' +
        'Ed25519 key pair that signs journal seals. The private key is stored encrypted under the master key from ' +
        'ONCEGATE_MASTER_KEY or ONCEGATE_MASTER_KEY_FILE; --dev writes a random development master key into the data folder ' +
        'instead. Give auditors the printed public key file. Existing keys and stores are left as they are.',
    )
    .option('--dev', 'without a master key, write a development master key into the data folder (development only)')
    .option('--create-database', "store.driver postgres: create the database the store URL names when the server does not have it (the URL's user needs CREATEDB)")
    .addOption(configOption())
    .action(
      action(async (io, options) => {
        const loaded = configOrExit(options, io);
        if (typeof loaded === 'number') return loaded;
        if (options.createDatabase === true && loaded.store.driver !== 'postgres') {
          throw new UsageError(`--create-database applies to store.driver postgres only; ${loaded.source} sets ${loaded.store.driver}, whose store init makes in the data folder`);
        }
        // The store first: an init that cannot use its store makes no keys, and says so before anything else.
        const store = await preparedStore(loaded, options.createDatabase === true, io);
        if (store !== EXIT_CODES.ok) return store;
        try {
          const dev = options.dev === true;
          const result = initSealKeys(loaded.dataDir, process.env, { dev });
          const { migratedKeyFiles } = await loadGatewayKeys(loaded.dataDir, process.env, { dev });
          io.stdout(`${result.created ? 'created' : 'already there'}: journal public key ${result.publicKeyFile}\n`);
          for (const file of migratedKeyFiles) io.stderr(`${file} held its key in plain; it is now wrapped under the master key\n`);
          if (result.devMasterKeyFile) io.stderr(`development master key written to ${result.devMasterKeyFile}; do not use it in production\n`);
          return EXIT_CODES.ok;
        } catch (error) {
          if (error instanceof SealKeyError || error instanceof KeyFileError) {
            io.stderr(`${error.message}\n`);
            return EXIT_CODES.failed;
          }
          throw error;
        }
      }),
    );
}

/**
 * Opens the configured store once (which makes its schema or its file) and says so; a PostgreSQL database the server
 * does not have is created first with `createDatabase`, else refused naming it. Other failures are printed as every
 * command prints them, without the URL's password.
 */
async function preparedStore(config: GatewayConfig, createDatabase: boolean, io: CliIo): Promise<ExitCode> {
  let opened = await openedOrError(config);
  if (opened instanceof EventStoreOpenError && opened.problem === 'no_database' && config.store.driver === 'postgres') {
    if (!createDatabase) {
      io.stderr(`${opened.message}; or run oncegate init --create-database to create it as the store URL's user; nothing was made\n`);
      return EXIT_CODES.failed;
    }
    let made;
    try {
      made = await createStoreDatabase(config.store);
    } catch (error) {
      if (!(error instanceof EventStoreOpenError || error instanceof EventStoreUnavailableError)) throw error;
      io.stderr(`${error.message}; nothing was made\n`);
      return EXIT_CODES.failed;
    }
    io.stdout(`${made.created ? 'created' : 'already there'}: database ${made.database} on ${made.server}\n`);
    opened = await openedOrError(config);
  }
  if (opened instanceof Error) {
    io.stderr(`${opened.message}; nothing was made\n`);
    return EXIT_CODES.failed;
  }
  await opened.close();
  io.stdout(`store ready: ${config.store.driver} ${storeLocation(config)}\n`);
  return EXIT_CODES.ok;
}

/** The data folder's store opened, or the store's own error (a missing database, an unreachable server). */
async function openedOrError(config: GatewayConfig): Promise<DataFolder | EventStoreOpenError | EventStoreUnavailableError> {
  try {
    return await openDataFolder(config);
  } catch (error) {
    if (error instanceof EventStoreOpenError || error instanceof EventStoreUnavailableError) return error;
    throw error;
  }
}

export function journalCommand() {
  const exportCommand = new Command('export')
    .summary('Write the journal (events and seals, in global order) as NDJSON to stdout.')
    .description(
      'Writes the journal (events and seals, in global order) as NDJSON to stdout: oncegate journal export > journal.ndjson. Result ' +
        'bodies and arguments are sealed outside the journal and never exported. Verify with: oncegate audit verify.',
    )
    .addOption(new Option('--from <position>', 'export the events after this global position').argParser(position).default(0))
    .addOption(new Option('--to <position>', 'export up to this global position (default: the head)').argParser(position))
    .addOption(configOption())
    .action(
      action((io, options) => {
        const { from, to } = options;
        return withDataFolder(options, io, async (folder, loaded) => {
          const head = await folder.store.headPosition();
          const last = Math.min(to ?? head, head);
          const keyFile = sealKeyPaths(loaded.dataDir).publicKey;
          const keyId = existsSync(keyFile) ? publicKeyId(loadSealPublicKey(keyFile)) : null;
          io.stdout(`${formatHeader({ exportedAt: new Date().toISOString(), fromPosition: from, toPosition: last, publicKeyId: keyId })}\n`);
          let count = 0;
          let chunk = '';
          for await (const event of readAllFrom(folder.store, { after: from, to: last, pageSize: EXPORT_CHUNK })) {
            chunk += `${formatEventLine(event)}\n`;
            count += 1;
            // One write per page of lines, not one per event.
            if (count % EXPORT_CHUNK === 0) {
              io.stdout(chunk);
              chunk = '';
            }
          }
          if (chunk !== '') io.stdout(chunk);
          io.stderr(`exported ${count} events (positions ${from + 1}..${last})\n`);
          return EXIT_CODES.ok;
        }, { readOnly: true });
      }),
    );
  return new Command('journal').description('The journal: export it for an offline check.').addCommand(exportCommand);
}

function describeReport(report: VerifyReport): string {
  if (report.ok) {
    return `OK: ${report.events} events, ${report.seals} seals, positions ${report.firstPosition}..${report.lastPosition}, every seal signature and hash checked\n`;
  }
  const failure = report.failure!;
  return (
    `FAILED (${failure.kind}): ${failure.detail}\n` +
    `  first bad event: stream ${failure.streamId ?? '?'}, revision ${failure.revision ?? '?'}, global position ${failure.position ?? '?'} (line ${failure.line})\n`
  );
}

export function auditCommand() {
  const verifyCommand = new Command('verify')
    .summary('Verify an exported journal offline: hash chains, seals and their signatures.')
    .description(
      'Verifies an exported journal offline: hash chains, seals and their signatures. Needs no gateway and no store. Exit 0 when the ' +
        'journal verifies; exit 1 naming the first bad event (stream, revision, global position) and the kind: edited, missing, ' +
        'inserted, reordered, unsealed tail, bad signature.',
    )
    .argument('<journal.ndjson>', 'the exported journal (oncegate journal export)')
    .addOption(new Option('--public-key <file>', "the journal's public key (journal-seal.pub.pem of the data folder's keys)").makeOptionMandatory())
    .option('--allow-unsealed-tail', 'accept events after the last seal (a journal exported while the gateway runs)')
    .addOption(
      new Option(
        '--workers <n>',
        'worker threads that check lines in parallel, 0 for this thread alone (default: one per core for a journal past its first 20,000 lines)',
      ).argParser(wholeNumber(0, 64)),
    )
    // Taken as every command takes it, so that a script can pass it to all; the check reads no configuration.
    .addOption(configOption().hideHelp())
    .action(
      action(async (io, file, options) => {
        const { publicKey: publicKeyFile, workers } = options;
        let key;
        try {
          key = loadSealPublicKey(publicKeyFile);
        } catch (error) {
          io.stderr(`${(error as Error).message}\n`);
          return EXIT_CODES.failed;
        }
        if (!existsSync(file)) {
          io.stderr(`journal file not found: ${file}\n`);
          return EXIT_CODES.failed;
        }
        // The file's bytes go to the workers in blocks; no string per line is made on this thread.
        const report = await verifyJournalFile(file, key, {
          allowUnsealedTail: options.allowUnsealedTail === true,
          ...(workers === undefined ? {} : { workers }),
        });
        (report.ok ? io.stdout : io.stderr)(describeReport(report));
        return report.ok ? EXIT_CODES.ok : EXIT_CODES.failed;
      }),
    );
  return new Command('audit').description("Checks of the journal that need no gateway: an auditor's.").addCommand(verifyCommand);
}
