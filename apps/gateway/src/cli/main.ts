import { readFile } from 'node:fs/promises';
import { runCli } from './cli';
import type { CliIo } from '@oncegate/service-host/cli-command';

const io: CliIo = {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
  readFile: (path) => readFile(path, 'utf8'),
  async readStdin() {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  },
};

process.exitCode = await runCli(process.argv.slice(2), io);
