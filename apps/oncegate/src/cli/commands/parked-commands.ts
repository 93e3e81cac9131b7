import { ParkedReplayRefusal, readParked, requestReplay, type ParkedEvent } from '@oncegate/nest-event-store';
import { action, EXIT_CODES, UsageError } from '@oncegate/host-cli';
import { SERVICE_CONSUMERS } from '@oncegate/service-host';
import { Command, Option } from '@commander-js/extra-typings';
import { actingAs, byLoginOption, configOption, jsonOption, withDataFolder } from '../command-helpers';

const CONSUMERS: readonly string[] = Object.values(SERVICE_CONSUMERS);

/** `--consumer <service>`: one service's parked events. */
const consumerOption = (what: string) => new Option('--consumer <service>', what).choices(CONSUMERS);

function describe(parked: ParkedEvent): string {
  const why = parked.behind === null ? parked.error : `waits behind ${parked.behind}`;
  const replay = parked.replayRequested ? '\treplay asked' : parked.lastReplayError !== null ? `\treplay failed: ${parked.lastReplayError}` : '';
  return `${parked.parkedId}\t${parked.consumer}\t${parked.type} ${parked.streamId}@${parked.revision}\tposition ${parked.position}\tsince ${parked.parkedAt}\t${why}${replay}\n`;
}

function listCommand() {
  return new Command('list')
    .summary("List events a service's handler kept failing on, set aside with their error (and those waiting behind them).")
    .addOption(consumerOption("only this service's (default: every service's)"))
    .addOption(jsonOption())
    .addOption(configOption())
    .action(
      action((io, options) => {
        const consumers = options.consumer === undefined ? CONSUMERS : [options.consumer];
        return withDataFolder(options, io, async (folder) => {
          const parked: ParkedEvent[] = [];
          for (const consumer of consumers) parked.push(...(await readParked(folder.store, consumer)).open);
          if (options.json === true) io.stdout(`${JSON.stringify(parked, null, 2)}\n`);
          else if (parked.length === 0) io.stdout('no event is parked\n');
          else for (const item of parked) io.stdout(describe(item));
          return EXIT_CODES.ok;
        });
      }),
    );
}

function showCommand() {
  return new Command('show')
    .summary('Show one parked event: which event, which service, why, and whether a replay is asked for.')
    .argument('<parked-id>', 'the parked event (from oncegate parked list)')
    .addOption(consumerOption("look among this service's only (default: every service's)"))
    .addOption(configOption())
    .action(
      action((io, id, options) => {
        const consumers = options.consumer === undefined ? CONSUMERS : [options.consumer];
        return withDataFolder(options, io, async (folder) => {
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
      }),
    );
}

function replayCommand() {
  return new Command('replay')
    .summary('Ask the running service to handle parked events again, once the fault is fixed; those behind them follow in order.')
    .description(
      'Asks the running service to handle parked events again, once the fault is fixed; those behind them follow in order. Name the ' +
        'parked event ids, or --all.',
    )
    .argument('[parked-id...]', 'the parked events to replay (from oncegate parked list)')
    .option('--all', "replay every event the service has parked")
    .addOption(consumerOption('the service whose parked events to replay').makeOptionMandatory())
    .addOption(byLoginOption('user'))
    .addOption(configOption())
    .action(
      action((io, ids, options) => {
        const all = options.all === true;
        if (all === ids.length > 0) throw new UsageError('name the parked event ids, or --all, not both');
        const { consumer } = options;
        const by = actingAs(options.by, 'user');
        return withDataFolder(options, io, async (folder) => {
          try {
            const replayed = await requestReplay(folder.store, consumer, all ? 'all' : ids, by);
            if (replayed.length === 0) io.stdout(`nothing of ${consumer} is parked\n`);
            else io.stdout(`replay asked of ${consumer} for ${replayed.join(', ')}; the running gateway handles them in order (oncegate parked list shows what remains)\n`);
            return EXIT_CODES.ok;
          } catch (error) {
            if (!(error instanceof ParkedReplayRefusal)) throw error;
            io.stderr(`${error.message}\n`);
            return EXIT_CODES.failed;
          }
        });
      }),
    );
}

/** `oncegate parked …`: the events services set aside, and their replay. */
export function parkedCommand() {
  return new Command('parked')
    .description("Events a service's handler kept failing on, set aside with their error: list, show, replay.")
    .addCommand(listCommand())
    .addCommand(showCommand())
    .addCommand(replayCommand());
}
