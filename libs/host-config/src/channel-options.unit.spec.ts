import { describe, expect, it } from 'vitest';
import { formatIssue } from '@oncegate/contracts';
import { channelOptionsIssue } from './channel-options';
import { GatewayConfigError, parseGatewayConfig } from './gateway-config';

const FILE = [
  'data_dir: ./data', //                        1
  'channels:', //                               2
  '  sql:', //                                  3
  '    max_rows: 500', //                       4
  '    tls:', //                                5
  '      ca_file: /etc/ca.pem', //              6
  '    hosts: [a, b]', //                       7
  '    empty:', //                              8
  '  ledger: { file: /var/ledger.txt }', //     9
].join('\n');

function issuesOf(text: string): string[] {
  try {
    parseGatewayConfig(text, 'oncegate.yaml');
  } catch (error) {
    if (error instanceof GatewayConfigError) return error.issues.map(formatIssue);
    throw error;
  }
  throw new Error('expected the configuration to be refused');
}

describe('the channels section of the configuration', () => {
  it('given entries for two channels, then each is kept as written, whatever it holds: only its channel knows what it may', () => {
    const config = parseGatewayConfig(FILE, 'oncegate.yaml');
    expect(Object.keys(config.channels)).toEqual(['sql', 'ledger']);
    expect(config.channels['sql']!.options).toEqual({ max_rows: 500, tls: { ca_file: '/etc/ca.pem' }, hosts: ['a', 'b'], empty: null });
    expect(config.channels['ledger']!.options).toEqual({ file: '/var/ledger.txt' });
  });

  it('given no channels section, then there are no entries', () => {
    expect(parseGatewayConfig('data_dir: ./data\n', 'oncegate.yaml').channels).toEqual({});
  });

  it('given a problem a channel finds in its entry, then it is placed at the line and column of the value, or of the key of a field that should not be there', () => {
    const config = parseGatewayConfig(FILE, 'oncegate.yaml');
    const at = (segments: Array<string | number>, place?: 'key' | 'value') => formatIssue(channelOptionsIssue(config, 'sql', segments, 'why', place));
    expect(at(['max_rows'])).toBe('oncegate.yaml:4:15 channels.sql.max_rows: why');
    expect(at(['max_rows'], 'key')).toBe('oncegate.yaml:4:5 channels.sql.max_rows: why');
    expect(at(['tls', 'ca_file'])).toBe('oncegate.yaml:6:16 channels.sql.tls.ca_file: why');
    expect(at(['hosts', 1])).toBe('oncegate.yaml:7:16 channels.sql.hosts[1]: why');
    // An empty value has no position of its own: its key stands for it.
    expect(at(['empty'])).toBe('oncegate.yaml:8:5 channels.sql.empty: why');
    // A field not written (a missing one) is placed at the mapping it is missing from.
    expect(at(['tls', 'server_name'])).toBe('oncegate.yaml:6:7 channels.sql.tls.server_name: why');
    expect(at([], 'key')).toBe('oncegate.yaml:3:3 channels.sql: why');
    expect(formatIssue(channelOptionsIssue(config, 'ledger', ['file'], 'why'))).toBe('oncegate.yaml:9:19 channels.ledger.file: why');
  });

  it('given a problem of a channel without an entry, then it is placed at the start of the file', () => {
    const config = parseGatewayConfig('data_dir: ./data\n', 'oncegate.yaml');
    expect(formatIssue(channelOptionsIssue(config, 'sql', ['dsn'], "missing required field 'dsn'"))).toBe("oncegate.yaml:1:1 channels.sql.dsn: missing required field 'dsn'");
  });

  it('given an entry that is not a mapping, or a key that is not a channel name, then the file is refused at its place', () => {
    expect(issuesOf('channels:\n  sql: 5\n')).toEqual(['oncegate.yaml:2:8 channels.sql: must be a mapping, got the number 5']);
    expect(issuesOf('channels:\n  SQL: {}\n')).toEqual(["oncegate.yaml:2:3 channels.SQL: 'SQL' is not a channel name ([a-z][a-z0-9-]*)"]);
  });

  it('given a misspelt channels section, then it is refused as an unknown field with the nearest one, as every unknown top-level key is', () => {
    expect(issuesOf('chanels:\n  sql: { max_rows: 5 }\n')).toEqual(["oncegate.yaml:1:1 chanels: unknown field 'chanels' — did you mean 'channels'?"]);
  });
});
