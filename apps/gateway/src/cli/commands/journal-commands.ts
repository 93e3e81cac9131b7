import { existsSync } from 'node:fs';
import { readAllFrom } from '@oncegate/event-store';
import { formatEventLine, formatHeader, publicKeyId, verifyJournalFile, type VerifyReport } from '@oncegate/journal';
import { KeyFileError, loadGatewayKeys } from '@oncegate/service-host/infrastructure/key-files';
import { initSealKeys, loadSealPublicKey, SealKeyError, sealKeyPaths } from '@oncegate/vault';
import { EXIT_CODES, UsageError, type CliCommand } from '@oncegate/service-host/cli-command';
import { configOrExit, parseCommandArgs, stringOption, withDataFolder } from '../command-helpers';

/** Events read per page by `journal export`, and lines written to stdout at once. */
const EXPORT_CHUNK = 1000;

function position(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!Number.isSafeInteger(number) || number < 0) throw new UsageError(`${name} must be a global position (a whole number >= 0)`);
  return number;
}

export const initCommand: CliCommand = {
  group: 'init',
  name: '',
  summary: 'Create the data folder, its keys and the journal signing key pair.',
  usage: `Usage: oncegate init [--config <file>] [--dev]

Creates the data folder's keys and the Ed25519 key pair that signs journal seals. The private key is
stored encrypted under the master key from ONCEGATE_MASTER_KEY or ONCEGATE_MASTER_KEY_FILE; --dev writes a
random development master key into the data folder instead. Give auditors the printed public key file.`,
  async run(args, io) {
    const parsed = parseCommandArgs(args, { dev: { type: 'boolean' } });
    if (parsed.positionals.length > 0) throw new UsageError('takes no arguments');
    const loaded = configOrExit(parsed, io);
    if (typeof loaded === 'number') return loaded;
    try {
      const dev = parsed.values['dev'] === true;
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
  },
};

export const journalExportCommand: CliCommand = {
  group: 'journal',
  name: 'export',
  summary: 'Write the journal (events and seals, in global order) as NDJSON to stdout.',
  usage: `Usage: oncegate journal export [--from <position>] [--to <position>] [--config <file>] > journal.ndjson

Exports events with global positions after --from (default 0) up to --to (default: the head). Result bodies
and arguments are sealed outside the journal and never exported. Verify with: oncegate audit verify.`,
  async run(args, io) {
    const parsed = parseCommandArgs(args, { from: { type: 'string' }, to: { type: 'string' } });
    if (parsed.positionals.length > 0) throw new UsageError('takes no arguments');
    const from = position(stringOption(parsed, 'from'), '--from') ?? 0;
    const to = position(stringOption(parsed, 'to'), '--to');
    return withDataFolder(parsed, io, async (folder, loaded) => {
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
  },
};

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

export const auditVerifyCommand: CliCommand = {
  group: 'audit',
  name: 'verify',
  summary: 'Verify an exported journal offline: hash chains, seals and their signatures.',
  usage: `Usage: oncegate audit verify <journal.ndjson> --public-key <file> [--allow-unsealed-tail] [--workers <n>]

Needs no gateway and no store. --workers sets how many worker threads check lines in parallel (0: this thread
alone); by default a long journal uses one per core after its first 20,000 lines. Exit 0 when the journal verifies; exit 1 naming the first bad event
(stream, revision, global position) and the kind: edited, missing, inserted, reordered, unsealed tail,
bad signature.`,
  async run(args, io) {
    const parsed = parseCommandArgs(args, { 'public-key': { type: 'string' }, 'allow-unsealed-tail': { type: 'boolean' }, workers: { type: 'string' } });
    const [file, ...rest] = parsed.positionals;
    const workersText = stringOption(parsed, 'workers');
    const workers = workersText === undefined ? undefined : Number(workersText);
    if (workers !== undefined && (!Number.isSafeInteger(workers) || workers < 0 || workers > 64)) {
      throw new UsageError('--workers must be a whole number from 0 to 64');
    }
    const publicKeyFile = stringOption(parsed, 'public-key');
    if (file === undefined || rest.length > 0) throw new UsageError('name exactly one journal file');
    if (publicKeyFile === undefined) throw new UsageError('--public-key <file> is required');
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
      allowUnsealedTail: parsed.values['allow-unsealed-tail'] === true,
      ...(workers === undefined ? {} : { workers }),
    });
    (report.ok ? io.stdout : io.stderr)(describeReport(report));
    return report.ok ? EXIT_CODES.ok : EXIT_CODES.failed;
  },
};
