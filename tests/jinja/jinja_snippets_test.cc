// The Jinja interpreter construct by construct: small templates covering whitespace control,
// expressions, filters, tests, methods, loops, macros and errors, each rendered by Forge and by
// python3-jinja2 (set up as HF does) and compared byte for byte.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tokenizer/chat_template.h"
#include "tokenizer/chat_templates/jinja_oracle.h"

namespace forge {
namespace {

using testing::OracleCase;
using testing::OracleResult;
using testing::OrderedJson;

const char* const kSnippets[] = {
    // Whitespace control: trim_blocks, lstrip_blocks, -, +, comments, raw, newlines.
    "a  \n  {% if true %}\n  x\n  {% endif %}\n  b",
    "{%- if true -%}  x  {%- endif -%}  |",
    "  {%+ if true %}x{% endif %}\n",
    "  {{ 'v' }}  \n  {{- 'w' -}}  \n.",
    "{# comment #}\n  {# c2 -#}   x {#- c3 #} y\n",
    "{% raw %}{{ not evaluated }}{% endraw %}\n|{%- raw -%}  z  {%- endraw -%}|",
    "one\r\ntwo\r  {% if true %}\r\nthree{% endif %}\r\n",
    "trailing newline kept once\n\n",
    "\t{% for i in [1, 2] %}\n\t\t{{ i }}\n\t{% endfor %}\n",
    "{% if true %}   \n{% endif %}   tail",
    "x {%- if true %} y {% endif -%} z",
    "{{ 'a' }}{# x #}{{ 'b' }}{#- x -#}   {{ 'c' }}",
    "{{- ' lead' }}",
    "{% set x %}\n  block {{ 1 }}\n{% endset %}[{{ x }}]",
    // Literals and printing.
    "{{ [1, 2.5, 'a', none, true, {'k': 'v'}, (1, 2), (3,)] }}",
    "{{ 1e16 }} {{ 1.5e-5 }} {{ 1e15 }} {{ 0.1 + 0.2 }} {{ 1 / 3 }} {{ 2.0 }} {{ -0.0 }} {{ 1e308 "
    "* 10 }}",
    "{{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1_000 }} {{ 1_0.5e1_0 }} {{ 0 }}",
    "{{ 'it\\'s' }} {{ \"say \\\"hi\\\"\" }} {{ 'tab\\there' }} {{ 'a' 'b' \"c\" }} {{ "
    "'\\x41\\u00e9\\101' }}",
    "{{ ['it\\'s', \"q\\\"\", 'both\\'\"', 'nl\\n', '\\x01', 'caf\xC3\xA9', '\\\\'] }}",
    "{{ {'a': 1, 'b': [none, false]} }} {{ true }} {{ none }} {{ undefined_name }}|",
    "{{ 'x' ~ none ~ 1.0 ~ true ~ [1] ~ undefined_name }}",
    // Arithmetic and comparison.
    "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 2 ** 10 "
    "}}",
    "{{ 2 ** -1 }} {{ -2 ** 2 }} {{ 2 ** 3 ** 2 }} {{ 3 / 2 }} {{ 4 / 2 }} {{ 1 + 2 * 3 - 4 }}",
    "{{ 'ab' * 3 }} {{ 3 * 'c' }} {{ [1] * 2 }} {{ [1, 2] + [3] }} {{ 'a' + 'b' }} {{ true + 1 }}",
    "{{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 < 2 < 3 }} {{ 3 > 2 "
    "> 2 }}",
    "{{ 1 != 2 }} {{ 2 >= 2 }} {{ 'b' <= 'a' }} {{ none == none }} {{ [1] == (1,) }} {{ {'a': 1} "
    "== {'a': 1} }}",
    "{{ 'a' in 'cat' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [1] }} {{ 'x' in "
    "undefined_name }}",
    "{{ 1 and 2 }} {{ 0 or 'x' }} {{ '' or [] }} {{ not none }} {{ none and 1 }} {{ not 1 == 2 }}",
    "{{ 'y' if 1 else 'n' }} {{ 'y' if 0 }}| {{ ('y' if 0) is defined }} {{ 'a' if 0 else 'b' if 1 "
    "else 'c' }}",
    // Indexing, attributes, slices.
    "{{ messages[0]['role'] }} {{ messages[-1].content }} {{ messages[5] is defined }} {{ d.b }} "
    "{{ d['a'][1] }}",
    "{{ l[1:] }} {{ l[:-1] }} {{ l[::-1] }} {{ l[::2] }} {{ l[5:] }} {{ l[-10:2] }} {{ (1, 2, "
    "3)[1:] }}",
    "{{ s[1:4] }} {{ s[-3:] }} {{ s[::-1] }} {{ 'h\xC3\xA9llo'[1] }} {{ 'h\xC3\xA9llo'[1:3] }}",
    "{{ d.items is defined }}|{{ d.missing }}|{{ d.missing is defined }} {{ none.x is defined }} "
    "{{ s.x is defined }}",
    "{{ d['items'] is defined }} {{ d.keys() | list }} {{ d.values() | list }} {{ d.get('b') }} {{ "
    "d.get('z', 9) }}",
    // String methods.
    "[{{ s.strip() }}] [{{ s.lstrip() }}] [{{ s.rstrip() }}] [{{ 'xxaxx'.strip('x') }}] [{{ "
    "s.upper() }}] [{{ s.lower() }}]",
    "{{ 'a,b,,c'.split(',') }} {{ '  a  b c '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a b "
    "c'.rsplit(' ', 1) }} {{ ' a  b '.split(none, 1) }} {{ ' a  b '.rsplit(none, 1) }}",
    "{{ 'hello'.startswith('he') }} {{ 'hello'.endswith(('x', 'lo')) }} {{ 'hello'.replace('l', "
    "'L') }} {{ 'hello'.replace('l', 'L', 1) }}",
    "{{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }} {{ 'abc'.find('c') }} {{ "
    "'abc'.find('z') }} {{ 'aaa'.count('a') }} {{ '-'.join(['a', 'b']) }}",
    "{{ 'a\\nb\\r\\nc'.splitlines() }} {{ '12'.isdigit() }} {{ 'ab'.isalpha() }} {{ '  '.isspace() "
    "}} {{ 'ab'.islower() }} {{ 'AB'.isupper() }}",
    "{{ '\xC3\xA9t\xC3\xA9 \xC3\x9F'.upper() }} {{ '\xC3\x89T\xC3\x89'.lower() }} {{ '42'.zfill(5) "
    "}} {{ 'caf\xC3\xA9 au lait'.title() }}",
    // Filters.
    "{{ s|trim }}|{{ s|length }} {{ l|length }} {{ d|count }} {{ undefined_name|length }} {{ "
    "'h\xC3\xA9'|length }}",
    "{{ undefined_name|default('dflt') }} {{ ''|default('e', true) }} {{ 0|d('z') }} {{ "
    "none|default('n') }}",
    "{{ s|upper }} {{ s|lower }} {{ 'hello world-foo(bar [baz'|title }} {{ 'hELLO'|capitalize }}",
    "{{ l|join(', ') }} {{ users|join('|', attribute='name') }} {{ [none, 1.5]|join }} {{ "
    "'abc'|join('.') }}",
    "{{ l|first }} {{ l|last }} {{ 'xyz'|first }} {{ []|first is defined }} {{ d|first }}",
    "{{ '3.7'|int }} {{ ' 12 '|int }} {{ 'abc'|int(5) }} {{ 'ff'|int(base=16) }} {{ 3.9|int }} {{ "
    "true|int }} {{ '1e3'|int }}",
    "{{ '2.5'|float }} {{ 3|float }} {{ 'x'|float }} {{ 2.5|round }} {{ 3.5|round }} {{ "
    "2.675|round(2) }} {{ 7|round }} {{ 2.1|round(0, 'ceil') }}",
    "{{ 1|string }} {{ none|string }} {{ ['a']|string }} {{ s|replace('l', 'L') }} {{ "
    "'aaa'|replace('a', 'b', 2) }}",
    "{{ 'ab'|list }} {{ d|list }} {{ d|items|list }} {{ undefined_name|items|list }} {{ d|dictsort "
    "}}",
    "{{ users|map(attribute='name')|list }} {{ l|map('string')|list }} {{ "
    "users|map(attribute='age', default=0)|list }}",
    "{{ users|selectattr('role', 'equalto', 'user')|map(attribute='name')|join(',') }} {{ "
    "users|rejectattr('age')|list|length }}",
    "{{ l|select('odd')|list }} {{ l|reject('odd')|list }} {{ [0, 1, '', 'a']|select|list }} {{ "
    "users|selectattr('age', 'gt', 20)|list|length }}",
    "{{ [3, 1, 2]|sort }} {{ ['b', 'A', 'a']|sort }} {{ ['b', 'A', 'a']|unique|list }} {{ "
    "l|sort(reverse=true) }} {{ users|sort(attribute='name')|map(attribute='name')|list }}",
    "{{ l|max }} {{ l|min }} {{ ['b', 'C']|max }} {{ l|sum }} {{ users|sum(attribute='age', "
    "start=1) }} {{ []|max is defined }}",
    "{{ -3|abs }} {{ 'abc'|reverse }} {{ l|reverse|list }} {{ '<a href=\"x\">&\\'</a>'|e }} {{ "
    "'x'|safe }}",
    "{{ 'a\\nb\\n\\nc'|indent(2) }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent('> ', "
    "blank=true) }}",
    "{{ d|tojson }} {{ [1, 'x', none, true, 2.5]|tojson }} {{ 'caf\xC3\xA9 \"q\" \\\\ \\n "
    "\\u0001'|tojson }} {{ {}|tojson }} {{ []|tojson }}",
    "{{ d|tojson(indent=2) }}|{{ d|tojson(indent=0) }}|{{ {'b': 1, 'a': 2}|tojson(sort_keys=true) "
    "}}|{{ 'caf\xC3\xA9'|tojson(ensure_ascii=true) }}",
    "{{ d|tojson(separators=(',', ':')) }} {{ users|tojson(indent='\\t') }}",
    "{{ d|attr('keys') is defined }} {{ d|attr('b') is defined }}",
    // Tests.
    "{{ 1 is odd }} {{ 2 is even }} {{ 9 is divisibleby 3 }} {{ x is defined }} {{ none is none }} "
    "{{ 'a' is string }}",
    "{{ d is mapping }} {{ l is iterable }} {{ l is sequence }} {{ 1 is number }} {{ 1.0 is float "
    "}} {{ true is boolean }} {{ 1 is integer }}",
    "{{ false is false }} {{ 0 is false }} {{ true is true }} {{ range is callable }} {{ 'ab' is "
    "lower }} {{ 'AB' is upper }}",
    "{{ 2 is in [1, 2] }} {{ 1 is eq 1 }} {{ 1 is ne 1 }} {{ 1 is lt 2 }} {{ 2 is ge 3 }} {{ none "
    "is sameas none }} {{ 'trim' is filter }} {{ 'odd' is test }}",
    "{{ undefined_name is iterable }} {{ undefined_name is sequence }} {{ 1 is not string }} {{ d "
    "is not mapping }}",
    // Statements: for, if, set, namespace, macros, call, filter, with, break/continue.
    "{% for m in messages %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 "
    "}}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}",
    "{% for x in l %}{{ loop.previtem }}-{{ loop.nextitem }}-{{ loop.cycle('a', 'b') }};{% endfor "
    "%}",
    "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %} {% for k in d %}{{ k }}{% endfor %} "
    "{% for c in 'ab' %}{{ c }}.{% endfor %}",
    "{% for x in l if x > 1 %}{{ x }}{{ loop.length }}{{ loop.last }};{% else %}none{% endfor %} "
    "{% for x in [] %}y{% else %}empty{% endfor %}",
    "{% for x in l %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 2 %}{% break %}{% endif "
    "%}{{ x }}{% endfor %}",
    "{% for i in range(3) %}{% if i == 1 %}{% set x = 5 %}{% endif %}[{{ x }}]{% endfor %}",
    "{% set x = 1 %}{% for i in range(3) %}[{{ x }}]{% set x = i %}{% endfor %}{{ x }}",
    "{% set ns = namespace(a=1, items=[]) %}{% for i in range(3) %}{% set ns.a = ns.a + i %}{% set "
    "ns.items = ns.items + [i] %}{% endfor %}{{ ns.a }} {{ ns.items }}",
    "{% set a, b = 1, 2 %}{{ a }}{{ b }} {% set t = (1, 2) %}{{ t }} {% set e = () %}{{ e }}",
    "{% if 0 %}a{% elif '' %}b{% elif [1] %}c{% else %}d{% endif %}",
    "{% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}{{ "
    "greet('Ann') }} {{ greet('Bob', greeting='Hi') }} {{ greet(name='Cy') }}",
    "{% set x = 1 %}{% macro m() %}{{ x }}{% endmacro %}{% set x = 2 %}{{ m() }}{% macro n() %}[{{ "
    "y }}]{% endmacro %}{% for y in [5] %}{{ n() }}{% endfor %}",
    "{% macro wrap() %}<{{ caller() }}>{% endmacro %}{% call wrap() %}inner {{ 1 + 1 }}{% endcall "
    "%}",
    "{% macro each(xs) %}{% for x in xs %}{{ caller(x) }}{% endfor %}{% endmacro %}{% call(v) "
    "each([1, 2]) %}[{{ v }}]{% endcall %}",
    "{% filter upper %}shout {{ 'it' }}{% endfilter %} {% set y | trim %}  padded  {% endset %}[{{ "
    "y }}]",
    "{% with a = 1, b = 'x' %}{{ a }}{{ b }}{% endwith %}{{ a is defined }}",
    "{% print 'printed', 1 %}",
    "{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(5, 0, -2) | list }} {{ dict(a=1) "
    "}} {{ namespace(b=2).b }}",
    "{{ strftime_now('%Y-%m-%d %H:%M:%S %A %B %d') }}",
    "{% generation %}gen {{ 1 }}{% endgeneration %}",
    // Errors (both must fail).
    "{{ x.y }}",
    "{{ undefined_fn() }}",
    "{{ 'x' + 1 }}",
    "{{ 1 + none }}",
    "{{ 1 / 0 }}",
    "{{ 1 // 0 }}",
    "{{ 'a' < 1 }}",
    "{{ x|foo }}",
    "{{ x is foo }}",
    "{% for %}",
    "{% if true %}",
    "{{ 1 + }}",
    "{% endfor %}",
    "{{ 'unterminated }}",
    "{{ (1, 2 }}",
    "{{ none|length }}",
    "{% for x in none %}{% endfor %}",
    "{{ 'abc'.split('') }}",
    "{{ [].append(1) }}",
    "{% for a, b in [[1, 2], [3]] %}{% endfor %}",
    "{{ raise_exception('boom ' ~ 42) }}",
    "{% break %}",
    "{{ range(100001) }}",
    "{{ l[:x] }}",
    "{{ d[1:] }}",
    "{{ 1 is divisibleby 0 }}",
    "{{ x['k'] }}",
    "{{ 'a' in 1 }}",
    "{{ l|map('nofilter')|list }}",
    "{% set l.x = 1 %}",
    "{% macro m(a=1, b) %}{% endmacro %}",
    "{{ 5|items|list }}",
};

TEST(ChatTemplateSnippetsTest, EqualToJinja2) {
  const std::string why = testing::JinjaUnavailableReason();
  if (!why.empty()) GTEST_SKIP() << why;
  const OrderedJson vars = OrderedJson::parse(R"({
      "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
                   {"role": "assistant", "content": "hello"}],
      "d": {"b": 1, "a": [1, 2], "items": "shadowed?"},
      "s": "  Hello World  ", "l": [3, 1, 2], "n": 7, "f": 2.5,
      "users": [{"name": "bo", "role": "user", "age": 30},
                {"name": "al", "role": "assistant", "age": 0},
                {"name": "cy", "role": "user", "age": 19}]})");
  constexpr int64_t kNow = 1700000000 + 3600 * 12;
  std::vector<OracleCase> cases;
  std::vector<StatusOr<std::string>> mine;
  for (const char* snippet : kSnippets) {
    cases.push_back({snippet, vars, kNow});
    StatusOr<ChatTemplate> t = ChatTemplate::Parse(snippet);
    if (!t.ok()) {
      mine.push_back(t.status());
      continue;
    }
    mine.push_back(t->Render(testing::ToVariables(vars), kNow));
  }
  const std::vector<OracleResult> ref = testing::RunOracle(cases);
  ASSERT_EQ(ref.size(), mine.size());
  int agree = 0, errors = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const std::string label = std::string("snippet ") + std::to_string(i) + ": " + kSnippets[i];
    if (ref[i].ok) {
      EXPECT_TRUE(mine[i].ok()) << label << "\n  Forge: " << mine[i].status().ToString()
                                << "\n  jinja2: " << ref[i].output;
      if (mine[i].ok()) {
        EXPECT_EQ(*mine[i], ref[i].output) << label;
        agree += *mine[i] == ref[i].output;
      }
    } else {
      ++errors;
      EXPECT_FALSE(mine[i].ok()) << label << "\n  jinja2 " << ref[i].type << ": " << ref[i].message
                                 << "\n  Forge: " << *mine[i];
      if (!mine[i].ok()) ++agree;
      if (ref[i].raised && !mine[i].ok()) {
        EXPECT_EQ(mine[i].status().message(), ref[i].message);
      }
    }
  }
  std::printf("  %d/%zu snippets agree with jinja2 (%d of them errors in both)\n", agree,
              ref.size(), errors);
}

}  // namespace
}  // namespace forge
