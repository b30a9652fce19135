/** The chat model through the real openai client against the fake OpenAI server: tools out, tool calls back. */
import type { ChatMessage } from '@ebb/core';
import { FakeOpenAiServer } from '@ebb/testing/openai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenAiChatModel } from './openai-chat-model.js';

let fake: FakeOpenAiServer;
let model: OpenAiChatModel;

beforeAll(async () => {
  fake = await FakeOpenAiServer.start();
  model = new OpenAiChatModel({
    client: new OpenAI({ baseURL: fake.url, apiKey: 'test', maxRetries: 0 }),
    model: 'gpt-4o-mini',
    maxOutputTokens: 100,
    retry: { attempts: 1, initialDelayMs: 1, maxDelayMs: 1 },
  });
});
afterAll(() => fake.close());

const tools = [
  {
    name: 'github.search_issues',
    description: 'Searches issues.',
    parameters: { type: 'object', properties: {} },
  },
  { name: 'search_history', description: 'Searches the channel.', parameters: { type: 'object' } },
];

describe('OpenAiChatModel with tools', () => {
  it('offers tools under their wire names and gives the calls back under Ebb names', async () => {
    fake.reset();
    fake.enqueue({
      toolCalls: [
        { id: 'call_a', name: 'github__search_issues', arguments: { q: 'flaky' } },
        { id: 'call_b', name: 'no_such_tool', arguments: '{}' },
      ],
    });
    const reply = await model.reply([{ role: 'user', content: 'ana: find the flaky test issue' }], { tools });
    expect(reply.text).toBe('');
    expect(reply.toolCalls).toEqual([
      { id: 'call_a', name: 'github.search_issues', arguments: '{"q":"flaky"}' },
      // A name the model made up comes back as it is: the toolbox answers that it is unknown.
      { id: 'call_b', name: 'no_such_tool', arguments: '{}' },
    ]);
    const sent = fake.completionRequests[0]?.body;
    expect(sent?.tools?.map((t) => (t as { function: { name: string } }).function.name)).toEqual([
      'github__search_issues',
      'search_history',
    ]);
  });

  it('sends earlier calls under their wire names, and no tools when none are offered', async () => {
    fake.reset();
    fake.enqueue({ content: 'There is one: #12.' });
    const history: ChatMessage[] = [
      { role: 'user', content: 'ana: find it' },
      {
        role: 'assistant',
        content: '',
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'github.search_issues', arguments: '{}' } },
        ],
      },
      { role: 'tool', content: '#12 flaky test', tool_call_id: 'call_a' },
    ];
    const reply = await model.reply(history);
    expect(reply).toMatchObject({ text: 'There is one: #12.' });
    expect(reply.toolCalls).toBeUndefined();
    const sent = fake.completionRequests[0]?.body;
    expect(sent?.tools).toBeUndefined();
    expect(sent?.messages[1]).toMatchObject({
      tool_calls: [{ id: 'call_a', function: { name: 'github__search_issues' } }],
    });
  });

  it('gives a call sent without an id, or with an id an earlier call of the reply has, an id of its own', async () => {
    fake.reset();
    fake.enqueue({
      toolCalls: [
        { id: null, name: 'search_history', arguments: { query: 'deploy' } },
        { id: 'call_a', name: 'search_history', arguments: { query: 'one' } },
        { id: 'call_a', name: 'search_history', arguments: { query: 'two' } },
        { id: '', name: 'search_history', arguments: { query: 'three' } },
      ],
    });
    const reply = await model.reply([{ role: 'user', content: 'ana: look it up' }], { tools });
    const ids = reply.toolCalls?.map((call) => call.id) ?? [];
    expect(ids).toEqual([
      expect.stringMatching(/^call_0_[0-9a-f]{12}$/),
      'call_a',
      expect.stringMatching(/^call_2_[0-9a-f]{12}$/),
      expect.stringMatching(/^call_3_[0-9a-f]{12}$/),
    ]);
    expect(new Set(ids).size).toBe(4);
  });
});

describe('OpenAiChatModel replies', () => {
  it('say which model answered and why it stopped, as the server does', async () => {
    fake.reset();
    fake.enqueue({ content: 'Done.', model: 'gpt-4o-mini-2024-07-18' });
    fake.enqueue({ toolCalls: [{ name: 'search_history', arguments: {} }] });
    const words = await model.reply([{ role: 'user', content: 'ana: hi' }]);
    const calls = await model.reply([{ role: 'user', content: 'ana: look' }], { tools });
    expect(words).toMatchObject({ responseModel: 'gpt-4o-mini-2024-07-18', finishReason: 'stop' });
    // Without a model of its own the fake answers as the model asked for, as OpenAI does.
    expect(calls).toMatchObject({ responseModel: 'gpt-4o-mini', finishReason: 'tool_calls' });
  });
});
