import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FaultProxy } from '@oncegate/dispatcher-kit/testing';
import { describeDispatcherConformance } from '@oncegate/dispatcher-kit/testing/vitest';
// eslint-disable-next-line @nx/enforce-module-boundaries -- the conformance run uses the shared real-sshd harness
import { startSshd } from '../../../test/support/sshd';
import { sshKit } from './ssh-channel';

// The SSH channel against a real sshd, through the dispatcher kit's conformance suite: its one class is
// remote_command, recovered by the durable marker on the host.
describeDispatcherConformance(
  'ssh (real sshd)',
  async () => {
    const sshd = await startSshd();
    const proxy = await FaultProxy.start(sshd.port);
    const effectsFile = join(sshd.workDir, 'effects');
    const lines = () => (existsSync(effectsFile) ? readFileSync(effectsFile, 'utf8').split('\n').filter(Boolean) : []);
    let watcher: NodeJS.Timeout | undefined;
    let struck: Promise<void> = Promise.resolve();
    /** Once the next effect shows on the host, `fault` strikes. */
    const afterNextEffect = (fault: () => unknown) => {
      const before = lines().length;
      clearInterval(watcher);
      let done: () => void = () => undefined;
      struck = new Promise((resolve) => (done = resolve));
      watcher = setInterval(() => {
        if (lines().length === before) return;
        clearInterval(watcher);
        void Promise.resolve(fault()).then(done);
      }, 20);
    };
    // The effect, then a second's work: the connection can be lost while the command still runs.
    const script = join(sshd.workDir, 'migrate.sh');
    writeFileSync(script, `echo "$1" >> ${effectsFile}\nsleep 1\necho migrated\n`, { mode: 0o755 });
    const ssh = {
      host: '127.0.0.1',
      port: proxy.port,
      user: sshd.user,
      host_key: sshd.hostKey,
      argv: ['/bin/sh', script, '{{execution.id}}'],
    };
    const contract = `version: 1
tools:
  - name: conformance_remote_command
    description: Run a migration step on the host.
    class: remote_command
    channel: ssh
    target: test/host
    credential_ref: deploy-key
    correlation_window: 10m
    input_schema: { type: object, properties: { step: { type: integer } }, required: [step], additionalProperties: false }
    ssh: ${JSON.stringify(ssh)}
    marker: ${JSON.stringify({ directory: join(sshd.workDir, 'markers'), written_before_work: true, started_wait: '5s' })}
    limits: { connect_timeout: 2s, response_timeout: 4s }
`;
    return {
      kit: sshKit,
      contract,
      credential: { ref: 'deploy-key', kind: 'ssh_key', bindings: [`127.0.0.1:${proxy.port}`], value: sshd.clientPrivateKey },
      target: {
        effects: async (executionId) => lines().filter((line) => line === executionId).length,
        // Once the command has taken effect, the connection goes; the command runs on to its marker.
        loseNextAnswer: () => afterNextEffect(() => sshd.killConnections()),
        // Once the command has taken effect, nothing more of the host reaches the dispatcher; the connection stays.
        withholdNextAnswer: () => afterNextEffect(() => proxy.withholdAll()),
        faultStruck: () => struck,
        unreachable: (on) => proxy.refuse(on),
      },
      args: (_operationClass, n) => ({ step: n }),
      async close() {
        clearInterval(watcher);
        await proxy.stop();
        await sshd.stop();
      },
    };
  },
  {
    classes: ['remote_command'],
    skip: () => (existsSync('/usr/sbin/sshd') ? undefined : '/usr/sbin/sshd not found: apt-get install openssh-server'),
    noEcho: 'a remote command answers with its own output, which the suite cannot make hold the SSH key',
  },
);
