export * from './fake-openai-server.js';
