import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { UpstreamFolder } from './upstream-server';

/*
 * An upstream MCP server that runs its writes as tasks (2025-11-25, on the official v1 SDK's task support), for the
 * channel's tests of recovery by task: `apply_migration` takes effect when its task starts (a line in the folder's
 * effect log, with the execution id the call carried) and completes after the seconds it was asked to take. The task
 * store lives in the server's memory, shared by every request (the server is stateless: any connection can ask for any
 * task), so stopping the server loses its tasks, as a restarted upstream would.
 */

/** The `_meta` key the channel sends the execution id under. */
const EXECUTION_ID = 'io.oncegate/execution-id';
const ATTEMPT = 'io.oncegate/attempt';

export interface TasksUpstream {
  readonly url: string;
  readonly port: number;
  readonly folder: UpstreamFolder;
  /** The tasks it knows now, by status. */
  tasks(): Promise<Array<{ taskId: string; status: string }>>;
  /** Stops it: its tasks are gone. */
  stop(): Promise<void>;
}

/** The server's tools on a fresh McpServer (one per request: the transport is stateless). */
function tasksServer(store: InMemoryTaskStore, folder: UpstreamFolder): McpServer {
  const server = new McpServer(
    { name: 'oncegate-test-tasks-upstream', version: '1.0.0' },
    { capabilities: { tasks: { requests: { tools: { call: {} } }, list: {}, cancel: {} } }, taskStore: store },
  );
  server.experimental.tasks.registerToolTask(
    'apply_migration',
    {
      description: 'Apply a schema migration; it runs as a task and takes the seconds asked.',
      inputSchema: { name: z.string().regex(/^[a-z0-9-]+$/), seconds: z.number().min(0).max(60) },
      annotations: { destructiveHint: true },
      execution: { taskSupport: 'optional' },
    },
    {
      async createTask({ name, seconds }, extra) {
        const meta = (extra as { _meta?: Record<string, unknown> })._meta ?? {};
        // Polled every 100 ms: the tests' timeouts are short.
        const task = await extra.taskStore.createTask({ ttl: 10 * 60_000, pollInterval: 100 });
        const executionId = typeof meta[EXECUTION_ID] === 'string' ? (meta[EXECUTION_ID] as string) : null;
        const attempt = typeof meta[ATTEMPT] === 'number' ? (meta[ATTEMPT] as number) : null;
        folder.record({ tool: 'apply_migration', executionId, attempt, args: { name, seconds }, effect: true, pid: process.pid });
        // The work goes on after the request that started it: its result is stored on the server's own store.
        setTimeout(() => {
          void store
            .storeTaskResult(task.taskId, 'completed', { content: [{ type: 'text', text: `migration ${name} applied (task ${task.taskId})` }] })
            .catch(() => undefined);
        }, seconds * 1_000).unref();
        return { task };
      },
      getTask: async (_args, { taskId, taskStore }) => taskStore.getTask(taskId),
      getTaskResult: async (_args, { taskId, taskStore }) => (await taskStore.getTaskResult(taskId)) as never,
    },
  );
  return server;
}

/** Starts the tasks upstream over Streamable HTTP on 127.0.0.1 (`port`: a given one, to start it again where it was). */
export async function startTasksUpstream(options: { readonly dir: string; readonly port?: number }): Promise<TasksUpstream> {
  const folder = new UpstreamFolder(options.dir);
  const store = new InMemoryTaskStore();
  const sockets = new Set<Socket>();
  const http: HttpServer = createServer((request, response) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      const body = chunks.length === 0 ? undefined : (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown);
      const server = tasksServer(store, folder);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      response.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(request, response, body);
    })().catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500).end(String((error as Error).message));
    });
  });
  http.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    folder,
    async tasks() {
      const { tasks } = await store.listTasks();
      return tasks.map((task) => ({ taskId: task.taskId, status: task.status }));
    },
    async stop() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => http.close(() => resolve()));
      store.cleanup();
    },
  };
}
