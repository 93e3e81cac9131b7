import { userInfo } from 'node:os';
import { ParkedReplayRefusal, readParked, requestReplay, type ParkedEvent } from '@oncegate/nest-event-store';
import { SERVICE_CONSUMERS } from '@oncegate/service-host/host';
import { EXIT_CODES, UsageError, type CliCommand } from '@oncegate/service-host/cli-command';
import { byOption, parseCommandArgs, stringOption, withDataFolder, type ParsedArguments } from '../command-helpers';

const CONSUMERS: readonly string[] = Object.values(SERVICE_CONSUMERS);

/** `--consumer` if given (checked), else every service's consumer. */
function consumersOf(parsed: ParsedArguments): readonly string[] {
  const consumer = stringOption(parsed, 'consumer');
  if (consumer === undefined) return CONSUMERS;
  if (!CONSUMERS.includes(consumer)) throw new UsageError(`--consumer '${consumer.slice(0, 64)}' is not a service; choose one of ${CONSUMERS.join(', ')}`);
  return [consumer];
}

function describe(parked: ParkedEvent): string {
  const why = parked.behind === null ? parked.error : `waits behind ${parked.behind}`;
  const replay = parked.replayRequested ? '\treplay asked' : parked.lastReplayError !== null ? `\treplay failed: ${parked.lastReplayError}` : '';
  return `${parked.parkedId}\t${parked.consumer}\t${parked.type} ${parked.streamId}@${parked.revision}\tposition ${parked.position}\tsince ${parked.parkedAt}\t${why}${replay}\n`;
}

export const parkedListCommand: CliCommand = {
  group: 'parked',
  name: 'list',
  summary: "List events a service's handler kept failing on, set aside with their error (and those waiting behind them).",
  usage: 'Usage: oncegate parked list [--consumer <service>] [--json] [--config <file>]',
  async run(args, io) {
    const parsed = parseCommandArgs(args, { consumer: { type: 'string' }, json: { type: 'boolean' } });
    if (parsed.positionals.length > 0) throw new UsageError('takes no arguments');
    const consumers = consumersOf(parsed);
    return withDataFolder(parsed, io, async (folder) => {
      const parked: ParkedEvent[] = [];
      for (const consumer of consumers) parked.push(...(await readParked(folder.store, consumer)).open);
      if (parsed.values['json'] === true) io.stdout(`${JSON.stringify(parked, null, 2)}\n`);
      else if (parked.length === 0) io.stdout('no event is parked\n');
      else for (const item of parked) io.stdout(describe(item));
      return EXIT_CODES.ok;
    });
  },
};

export const parkedShowCommand: CliCommand = {
  group: 'parked',
  name: 'show',
  summary: 'Show one parked event: which event, which service, why, and whether a replay is asked for.',
  usage: 'Usage: oncegate parked show <parked-id> [--consumer <service>] [--config <file>]',
  async run(args, io) {
    const parsed = parseCommandArgs(args, { consumer: { type: 'string' } });
    const [id, ...rest] = parsed.positionals;
    if (id === undefined || rest.length > 0) throw new UsageError('name exactly one parked event id (from oncegate parked list)');
    const consumers = consumersOf(parsed);
    return withDataFolder(parsed, io, async (folder) => {
      for (const consumer of consumers) {
        const found = (await readParked(folder.store, consumer)).open.find((parked) => parked.parkedId === id);
        if (found !== undefined) {
          io.stdout(`${JSON.stringify(found, null, 2)}\n`);
          return EXIT_CODES.ok;
        }
      }
      io.stderr(`no parked event ${id.slice(0, 64)} (it may have been replayed already)\n`);
      return EXIT_CODES.failed;
    });
  },
};

export const parkedReplayCommand: CliCommand = {
  group: 'parked',
  name: 'replay',
  summary: 'Ask the running service to handle parked events again, once the fault is fixed; those behind them follow in order.',
  usage: 'Usage: oncegate parked replay (<parked-id>… | --all) --consumer <service> [--by <who>] [--config <file>]',
  async run(args, io) {
    const parsed = parseCommandArgs(args, { consumer: { type: 'string' }, all: { type: 'boolean' }, by: { type: 'string' } });
    const all = parsed.values['all'] === true;
    if (all === (parsed.positionals.length > 0)) throw new UsageError('name the parked event ids, or --all, not both');
    if (stringOption(parsed, 'consumer') === undefined) throw new UsageError(`--consumer is required: one of ${CONSUMERS.join(', ')}`);
    const [consumer] = consumersOf(parsed);
    const by = byOption(parsed, `user:${userInfo().username}`);
    return withDataFolder(parsed, io, async (folder) => {
      try {
        const ids = await requestReplay(folder.store, consumer!, all ? 'all' : parsed.positionals, by);
        if (ids.length === 0) io.stdout(`nothing of ${consumer} is parked\n`);
        else io.stdout(`replay asked of ${consumer} for ${ids.join(', ')}; the running gateway handles them in order (oncegate parked list shows what remains)\n`);
        return EXIT_CODES.ok;
      } catch (error) {
        if (!(error instanceof ParkedReplayRefusal)) throw error;
        io.stderr(`${error.message}\n`);
        return EXIT_CODES.failed;
      }
    });
  },
};
