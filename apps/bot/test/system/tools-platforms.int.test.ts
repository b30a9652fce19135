/**
 * A tool turn through Slack (Socket Mode) and Discord: the real Bolt and discord.js clients against
 * the platform fakes, the fake OpenAI server answering with a tool call, and the fake MCP server over
 * stdio. Only the final answer reaches the channel; the call and its result are in the archive.
 */
import { loadEnv, parseConfig } from '@ebb/config';
import { PgChannelStore } from '@ebb/db';
import { freshSchemaDb } from '@ebb/db/test-support';
import { createLogger } from '@ebb/logger';
import { dropPrefix, randomPrefix } from '@ebb/queue/test-support';
import { FakeDiscord } from '@ebb/testing/discord';
import { fakeMcpStdioCommand } from '@ebb/testing/mcp';
import { FakeOpenAiServer, type RecordedRequest } from '@ebb/testing/openai';
import { FAKE_SLACK, FakeSlack } from '@ebb/testing/slack';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type RunningEbb, startEbb } from '../../src/start-ebb.js';
import { mcpServersReady } from '../mcp-ready.js';

interface Platform {
  readonly env: Record<string, string>;
  readonly platforms: Parameters<typeof startEbb>[0]['platforms'];
  readonly key: string;
  say(text: string): void;
  botPosts(): string[];
  close(): Promise<void>;
}

async function slack(): Promise<Platform> {
  const fake = await FakeSlack.start();
  const channel = FAKE_SLACK.channels.general;
  return {
    env: { SLACK_BOT_TOKEN: 'xoxb-test-bot-token', SLACK_APP_TOKEN: 'xapp-test-app-token' },
    platforms: { slackApiUrl: fake.apiUrl, slackPort: 0 },
    key: `slack:${fake.identity.teamId}:${channel}`,
    say: (text) => void fake.deliver(fake.build.channelMessage({ text, channel })),
    botPosts: () => fake.messages.filter((m) => m.channel === channel).map((m) => m.text ?? ''),
    close: () => fake.close(),
  };
}

async function discord(): Promise<Platform> {
  const fake = await FakeDiscord.start();
  const alice = fake.createUser({ username: 'alice', globalName: 'Alice' });
  const channel = fake.guild.channel('general');
  return {
    env: { DISCORD_TOKEN: fake.token },
    platforms: { discordRestApi: fake.restApi },
    key: `discord:${fake.guild.id}:${channel.id}`,
    say: (text) => fake.postMessage({ channel, author: alice, content: text }),
    botPosts: () => fake.posted.filter((m) => m.channel_id === channel.id).map((m) => m.content ?? ''),
    close: () => fake.close(),
  };
}

describe.each([
  ['Slack', slack],
  ['Discord', discord],
])('a tool turn on %s', (_name, start) => {
  let openai: FakeOpenAiServer;
  let fresh: Awaited<ReturnType<typeof freshSchemaDb>>;
  let ebb: RunningEbb;
  let platform: Platform;
  const prefix = randomPrefix();

  beforeAll(async () => {
    openai = await FakeOpenAiServer.start();
    fresh = await freshSchemaDb();
    platform = await start();
    const { command, args } = fakeMcpStdioCommand({
      tools: ['lookup'],
      lookup: { ana: 'Ana runs the deploys' },
    });
    const config = parseConfig(
      [
        '[llm]',
        `base_url = "${openai.url}"`,
        '[bot]',
        'respond_to = "all"',
        '[tools]',
        'allow = ["dir.*"]',
        '[mcp.servers.dir]',
        `command = ${JSON.stringify(command)}`,
        `args = ${JSON.stringify(args)}`,
      ].join('\n'),
      'tools-platforms.toml',
    );
    ebb = await startEbb({
      config: () => config,
      env: loadEnv({ OPENAI_API_KEY: 'test-key', EBB_REDIS_PREFIX: prefix, ...platform.env }),
      logger: createLogger({ level: 'silent' }),
      withWorker: true,
      webPort: 0,
      database: fresh.database,
      processMetrics: false,
      ...(platform.platforms ? { platforms: platform.platforms } : {}),
    });
  }, 60_000);

  afterAll(async () => {
    await ebb?.close();
    await platform?.close();
    await dropPrefix(prefix);
    await fresh?.close();
    await openai?.close();
  });

  it('calls the tool, posts only the answer, and archives the pair', async () => {
    await mcpServersReady(ebb.web.url, ['dir']);
    openai.enqueue(
      { toolCalls: [{ name: 'dir__lookup', arguments: { key: 'ana' } }] },
      (request: RecordedRequest) => {
        const last = request.body.messages.at(-1);
        return { content: `Found: ${last?.role === 'tool' ? String(last.content) : '(nothing)'}` };
      },
    );
    platform.say('who runs the deploys?');
    await vi.waitFor(() => expect(platform.botPosts()).toEqual(['Found: Ana runs the deploys']), {
      timeout: 15_000,
    });
    // The answer is archived right after it is posted: wait for its row.
    const store = new PgChannelStore({ db: fresh.db });
    const archive = await vi.waitFor(
      async () => {
        const rows = await store.readArchive(platform.key, 1, 10);
        expect(rows).toHaveLength(4);
        return rows;
      },
      { timeout: 10_000 },
    );
    expect(archive.map((m) => [m.role, m.toolCalls?.[0]?.name ?? m.toolCallId ?? null])).toEqual([
      ['user', null],
      ['assistant', 'dir.lookup'],
      ['tool', archive[1]?.toolCalls?.[0]?.id],
      ['assistant', null],
    ]);
  });
});
