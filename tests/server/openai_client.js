// Drives `forge serve` with the official `openai` npm client (server_openai_client_test.cc):
// node openai_client.js PORT API_KEY. Prints one JSON line of results; exits 1 on any error.
const OpenAI = require('openai');

async function main() {
  const [port, apiKey] = process.argv.slice(2);
  const client = new OpenAI({baseURL: `http://127.0.0.1:${port}/v1`, apiKey, maxRetries: 0});
  const models = await client.models.list();
  const model = models.data[0].id;
  const completion = await client.completions.create(
      {model, prompt: 'Once upon a time', max_tokens: 12, temperature: 0});
  let streamed = '';
  let usage = null;
  const stream = await client.chat.completions.create({
    model,
    messages: [{role: 'user', content: 'Tell me a story'}],
    max_tokens: 12,
    temperature: 0,
    stream: true,
    stream_options: {include_usage: true},
  });
  for await (const chunk of stream) {
    if (chunk.choices.length) streamed += chunk.choices[0].delta.content || '';
    if (chunk.usage) usage = chunk.usage;
  }
  const chat = await client.chat.completions.create({
    model,
    messages: [{role: 'user', content: 'Tell me a story'}],
    max_tokens: 12,
    temperature: 0,
  });
  let rejected = null;
  try {
    await client.chat.completions.create(
        {model, messages: [{role: 'user', content: 'hi'}], tools: [{type: 'function',
          function: {name: 'f', parameters: {type: 'object', properties: {}}}}]});
  } catch (e) {
    rejected = {status: e.status, param: e.param};
  }
  console.log(JSON.stringify({
    model,
    completion_text: completion.choices[0].text,
    completion_tokens: completion.usage.completion_tokens,
    chat_text: chat.choices[0].message.content,
    streamed_text: streamed,
    stream_usage: usage,
    rejected,
  }));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
