// Drives `forge serve` with the official `openai` npm client (server_openai_client_test.cc):
// node openai_client.js PORT API_KEY [MODULE]: MODULE is the package to load ("openai", the 4.x
// line, or "openai-latest"). Prints one JSON line of results; exits 1 on any error.
const [port, apiKey, moduleName] = process.argv.slice(2);
const loaded = require(moduleName || 'openai');
const OpenAI = loaded.OpenAI || loaded.default || loaded;

async function main() {
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
    await client.chat.completions.create({model, messages: [{role: 'user', content: 'hi'}],
      functions: [{name: 'f', parameters: {type: 'object', properties: {}}}]});
  } catch (e) {
    rejected = {status: e.status, param: e.param};
  }
  // Structured output: JSON of a schema, as the client asks for it.
  const person = await client.chat.completions.create({
    model,
    messages: [{role: 'user', content: 'Describe a person.'}],
    max_tokens: 100,
    temperature: 0.7,
    seed: 1,
    response_format: {type: 'json_schema', json_schema: {name: 'person', strict: true, schema: {
      type: 'object', additionalProperties: false, required: ['name', 'age'],
      properties: {name: {type: 'string', maxLength: 8}, age: {type: 'integer', minimum: 0,
        maximum: 99}}}}},
  });
  // Tools: a call the model must make, then the conversation with its result.
  const tools = [{type: 'function', function: {name: 'get_weather', description: 'Weather now',
    parameters: {type: 'object', required: ['city'], properties: {city: {type: 'string',
      maxLength: 12}, unit: {enum: ['c', 'f']}}}}}];
  const messages = [{role: 'user', content: 'What is the weather in Paris?'}];
  const call = await client.chat.completions.create({model, messages, tools, max_tokens: 200,
    temperature: 0.7, seed: 2, tool_choice: 'required', parallel_tool_calls: false});
  const callMessage = call.choices[0].message;
  let streamedCall = null;
  const callStream = await client.chat.completions.create({model, messages, tools,
    max_tokens: 200, temperature: 0.7, seed: 2, tool_choice: 'required', parallel_tool_calls: false,
    stream: true});
  for await (const chunk of callStream) {
    for (const c of chunk.choices) {
      for (const d of (c.delta.tool_calls || [])) {
        streamedCall = streamedCall || {id: '', name: '', arguments: ''};
        if (d.id) streamedCall.id = d.id;
        if (d.function && d.function.name) streamedCall.name += d.function.name;
        if (d.function && d.function.arguments) streamedCall.arguments += d.function.arguments;
      }
    }
  }
  const second = await client.chat.completions.create({model, tools, max_tokens: 8,
    temperature: 0, messages: [...messages, callMessage,
      {role: 'tool', tool_call_id: callMessage.tool_calls[0].id, content: '{"temp": 21}'}]});
  console.log(JSON.stringify({
    model,
    completion_text: completion.choices[0].text,
    completion_tokens: completion.usage.completion_tokens,
    chat_text: chat.choices[0].message.content,
    streamed_text: streamed,
    stream_usage: usage,
    rejected,
    person: {content: person.choices[0].message.content,
      finish: person.choices[0].finish_reason},
    call: {finish: call.choices[0].finish_reason, content: callMessage.content,
      tool_calls: callMessage.tool_calls},
    streamed_call: streamedCall,
    second_finish: second.choices[0].finish_reason,
  }));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
