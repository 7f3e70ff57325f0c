// The Herald console: one page over the gateway's /v1 API, no framework and no build step.
//
// Rules this file keeps, because the page handles an API key and shows what devices and
// backends wrote (a user name can be any text):
// - Text from the API reaches the page only as text nodes or attribute values, never as
//   markup: the element builder below has no way to take HTML.
// - The key lives in sessionStorage only (this tab, until sign-out or the tab closes); it is
//   never put in a URL, a cookie or localStorage, and only ever sent in the Authorization header.
// - The server's Content-Security-Policy forbids inline script and style, so there are no
//   handlers or style attributes in the markup; widths are set through the CSSOM.
'use strict';

(() => {
  const KEY_STORAGE = 'herald.apiKey';
  const SVG_NS = 'http://www.w3.org/2000/svg';
  const POLL_MS = 1000;
  // A scheduled notification's detail is read again this often until its time is near: a page
  // left open on one due next week would otherwise ask every second until then.
  const SCHEDULED_POLL_MS = 30000;
  const OVERVIEW_REFRESH_MS = 15000;
  // A finished notification is read again this often while its page is open: its devices report
  // receipts (received, opened) long after the push services accepted it.
  const RECEIPTS_POLL_MS = 15000;
  // The overview's receipts chart: this many days (UTC), today last.
  const FUNNEL_DAYS = 14;
  const PAGE_SIZE = 20;
  const STATUSES = ['active', 'unregistered', 'invalid'];
  const ENVIRONMENTS = ['production', 'sandbox'];
  const PLATFORMS = ['apns', 'webpush', 'fcm', 'hms'];
  // How a device ended: sent (accepted, rejected, failed), or held back without a fault.
  const OUTCOMES = ['accepted', 'rejected', 'failed', 'optedOut', 'capped', 'digested'];
  const SKIPS = ['optedOut', 'capped', 'digested'];
  const OUTCOME_NAMES = { optedOut: 'opted-out', capped: 'capped', digested: 'digested' };
  const SKIP_NAMES = { optedOut: 'opted out', capped: 'capped', digested: 'digested' };
  // What a notification's devices report (POST /v1/receipts), as GET /v1/notifications/{id} counts them.
  const RECEIPT_EVENTS = ['received', 'opened', 'dismissed', 'clicked'];
  // A notification's funnel, each stage with the one its rate is a share of (the API's `rates`).
  const FUNNEL_STAGES = [
    { stage: 'sent', name: 'Sent' },
    { stage: 'accepted', name: 'Accepted', of: 'sent' },
    { stage: 'received', name: 'Received', of: 'accepted' },
    { stage: 'opened', name: 'Opened', of: 'accepted' },
  ];
  // The overview's receipts chart: a bar each, side by side, per day.
  const DAILY_SERIES = ['accepted', 'received', 'opened'];

  const state = {
    apps: [],
    app: null,
    // Bumped on every navigation: work started for a view that is no longer shown sees a stale
    // generation and drops its result, and its timers stop.
    generation: 0,
    timers: new Set(),
  };

  const $ = (id) => document.getElementById(id);

  // ---------------------------------------------------------------------------------------
  // DOM helpers

  /// An element with attributes and children; strings become text nodes. Attribute names that
  /// would run script or set inline style are refused outright.
  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    setAttributes(node, attributes);
    append(node, children);
    return node;
  }

  function svg(tag, attributes, ...children) {
    const node = document.createElementNS(SVG_NS, tag);
    setAttributes(node, attributes);
    append(node, children);
    return node;
  }

  function setAttributes(node, attributes) {
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value === undefined || value === null || value === false) continue;
      const lower = name.toLowerCase();
      if (lower.startsWith('on') || lower === 'style') throw new Error(`attribute ${name} is not allowed`);
      node.setAttribute(name, value === true ? '' : String(value));
    }
  }

  function append(node, children) {
    for (const child of children.flat()) {
      if (child === undefined || child === null || child === false) continue;
      node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
    }
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function show(node, visible) {
    node.hidden = !visible;
  }

  function setText(node, text) {
    node.textContent = text === undefined || text === null ? '' : String(text);
  }

  function showError(node, message) {
    setText(node, message || '');
    show(node, Boolean(message));
  }

  /// A link inside the page: every segment is encoded, so no value can leave the hash.
  function href(...segments) {
    return '#/' + segments.map((segment) => encodeURIComponent(segment)).join('/');
  }

  function hrefWithQuery(segments, query) {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(query)) if (value) params.set(name, value);
    const text = params.toString();
    return href(...segments) + (text ? '?' + text : '');
  }

  const numberFormat = new Intl.NumberFormat();
  function count(value) {
    return typeof value === 'number' ? numberFormat.format(value) : '–';
  }

  /// A share (0..1, as the API gives rates) as a percentage to one decimal: "33.3 %"; "–" for null.
  const percentNumber = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });
  function percentText(rate) {
    return typeof rate === 'number' && Number.isFinite(rate) ? `${percentNumber.format(rate * 100)} %` : '–';
  }

  /// part of whole as a percentage; "–" when whole is 0.
  function shareText(part, whole) {
    return whole > 0 ? percentText(part / whole) : '–';
  }

  /// Milliseconds in words short enough for a line: "850 ms", "1.2 s", "4 min 5 s", "2 h 10 min", "3 d 4 h".
  const tenths = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });
  function durationText(milliseconds) {
    const value = Number(milliseconds);
    if (milliseconds === null || milliseconds === undefined || !Number.isFinite(value) || value < 0) return '–';
    if (value < 999.5) return `${numberFormat.format(Math.round(value))} ms`;
    if (value < 59950) return `${tenths.format(value / 1000)} s`;
    const seconds = Math.round(value / 1000);
    if (seconds < 3600) return seconds % 60 ? `${Math.floor(seconds / 60)} min ${seconds % 60} s` : `${seconds / 60} min`;
    const minutes = Math.round(seconds / 60);
    if (minutes < 1440) return minutes % 60 ? `${Math.floor(minutes / 60)} h ${minutes % 60} min` : `${minutes / 60} h`;
    const hours = Math.round(minutes / 60);
    return hours % 24 ? `${numberFormat.format(Math.floor(hours / 24))} d ${hours % 24} h` : `${numberFormat.format(hours / 24)} d`;
  }

  function pad(number) {
    return String(number).padStart(2, '0');
  }

  /// An RFC 3339 time as local time to the second; the exact value stays in the title.
  function time(iso) {
    if (!iso) return el('span', { class: 'muted' }, '–');
    const date = new Date(iso);
    if (Number.isNaN(date.getTime())) return el('span', {}, iso);
    const text = `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
      `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
    return el('time', { datetime: iso, title: iso }, text);
  }

  function badgeClass(status) {
    return `badge badge-${String(status).toLowerCase().replace(/[^a-z]/g, '')}`;
  }

  function badge(status) {
    return el('span', { class: badgeClass(status) }, status);
  }

  function setBadge(node, status) {
    node.className = badgeClass(status);
    setText(node, status);
  }

  /// A value from the API shown as indented JSON, as text.
  function jsonBlock(value, attributes) {
    return el('pre', { class: 'json', ...(attributes || {}) }, JSON.stringify(value, null, 2));
  }

  /// A window of seconds in words: "day", "10 minutes", "90 seconds".
  function windowText(seconds) {
    const value = Number(seconds);
    if (!Number.isFinite(value) || value <= 0) return `${seconds} seconds`;
    for (const [unit, size] of [['day', 86400], ['hour', 3600], ['minute', 60], ['second', 1]]) {
      if (value % size === 0) {
        const amount = value / size;
        return amount === 1 ? unit : `${count(amount)} ${unit}s`;
      }
    }
    return `${count(value)} seconds`;
  }

  /// A category's caps: "at most 3 per day; at most 1 per 10 minutes".
  function capsText(caps) {
    const list = Array.isArray(caps) ? caps.filter((cap) => cap && typeof cap === 'object') : [];
    return list.map((cap) => `at most ${count(cap.count)} per ${windowText(cap.windowSeconds)}`).join('; ');
  }

  /// A device token, shortened for tables; the whole token is in the title and in the link.
  function tokenText(token) {
    const text = String(token);
    return el('code', { class: 'token', title: text }, text.length > 20 ? `${text.slice(0, 12)}…${text.slice(-6)}` : text);
  }

  function table(columns, rows, attributes) {
    const head = el('thead', {}, el('tr', {}, columns.map((column) =>
      el('th', { scope: 'col', class: column.numeric ? 'num' : null }, column.title))));
    const body = el('tbody', {}, rows);
    return el('div', { class: 'table-wrap' }, el('table', attributes || {}, head, body));
  }

  function cell(content, numeric) {
    return el('td', { class: numeric ? 'num' : null }, content);
  }

  // ---------------------------------------------------------------------------------------
  // The API

  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  function apiKey() {
    return sessionStorage.getItem(KEY_STORAGE);
  }

  /// One call to /v1 with the key in the Authorization header; the parsed JSON answer, or an
  /// ApiError carrying the gateway's own message.
  async function api(segments, options = {}) {
    const key = options.key || apiKey();
    if (!key) throw new ApiError(401, 'unauthorized', 'Sign in first.');
    let url = '/v1/' + segments.map((segment) => encodeURIComponent(segment)).join('/');
    if (options.query) {
      const params = new URLSearchParams();
      for (const [name, value] of Object.entries(options.query)) {
        if (value !== undefined && value !== null && value !== '') params.set(name, String(value));
      }
      const text = params.toString();
      if (text) url += '?' + text;
    }
    const headers = { Authorization: `Bearer ${key}`, Accept: 'application/json' };
    if (options.body !== undefined) headers['Content-Type'] = options.contentType || 'application/json';
    let response;
    try {
      response = await fetch(url, {
        method: options.method || 'GET', headers, body: options.body, cache: 'no-store', credentials: 'omit', redirect: 'error',
      });
    } catch (error) {
      throw new ApiError(0, 'network', 'The gateway could not be reached; check that it is running, then try again.');
    }
    const text = await response.text();
    let data = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch (error) {
        data = null;
      }
    }
    if (!response.ok) {
      const body = data && typeof data === 'object' ? data.error : null;
      const message = body && typeof body.message === 'string' ? body.message : `The gateway answered ${response.status} ${response.statusText}.`;
      const failure = new ApiError(response.status, body && typeof body.code === 'string' ? body.code : 'http', message);
      // A key revoked while signed in: back to the sign-in form, saying why.
      if (response.status === 401 && !options.key) signOut(`Signed out: ${message}`);
      throw failure;
    }
    return data;
  }

  // ---------------------------------------------------------------------------------------
  // The gateway's JSON parser, mirrored
  //
  // The send form checks its body before sending, and a refusal must read exactly as the
  // gateway's would: the same parser rules (RFC 8259, strict, I-JSON's no duplicate keys, 512
  // levels) and the same messages, with byte offsets into the UTF-8 body that would be sent.
  // Mirrors HeraldCore/JSON/JSONParser.swift and PeerText.swift.

  class JSONParseError extends Error {
    constructor(offset, message) {
      super(`invalid JSON at byte ${offset}: ${message}`);
      this.offset = offset;
    }
  }

  function peerText(text, limit) {
    let result = '';
    let counted = 0;
    for (const character of text) {
      if (counted >= limit) {
        result += '…';
        break;
      }
      const code = character.codePointAt(0);
      const unsafe = code < 0x20 || (code >= 0x7f && code <= 0x9f) || code === 0x2028 || code === 0x2029 ||
        code === 0x200e || code === 0x200f || (code >= 0x202a && code <= 0x202e) || (code >= 0x2066 && code <= 0x2069);
      result += unsafe ? `\\u{${code.toString(16)}}` : character;
      counted += 1;
    }
    return result;
  }

  function checkJSON(bytes) {
    const MAX_DEPTH = 512;
    const decoder = new TextDecoder('utf-8', { fatal: true });
    let position = 0;
    let depth = 0;
    const fail = (message, at = position) => new JSONParseError(at, message);
    const is = (character) => position < bytes.length && bytes[position] === character.charCodeAt(0);
    const describe = (byte) => (byte >= 0x20 && byte < 0x7f ? `'${String.fromCharCode(byte)}'` : `byte 0x${byte.toString(16)}`);
    const skipWhitespace = () => {
      while (position < bytes.length && (bytes[position] === 0x20 || bytes[position] === 0x09 || bytes[position] === 0x0a || bytes[position] === 0x0d)) position += 1;
    };
    const skipDigits = () => {
      const start = position;
      while (position < bytes.length && bytes[position] >= 0x30 && bytes[position] <= 0x39) position += 1;
      return position - start;
    };
    const enter = () => {
      depth += 1;
      if (depth > MAX_DEPTH) throw fail(`nesting deeper than ${MAX_DEPTH} levels`);
    };
    const hex4 = () => {
      if (position + 4 > bytes.length) throw fail('truncated \\u escape');
      let value = 0;
      for (let index = 0; index < 4; index += 1) {
        const byte = bytes[position];
        let digit;
        if (byte >= 0x30 && byte <= 0x39) digit = byte - 0x30;
        else if (byte >= 0x61 && byte <= 0x66) digit = byte - 0x61 + 10;
        else if (byte >= 0x41 && byte <= 0x46) digit = byte - 0x41 + 10;
        else throw fail(`invalid hex digit ${describe(byte)} in \\u escape`);
        value = (value << 4) | digit;
        position += 1;
      }
      return value;
    };
    const escape = (output) => {
      position += 1;
      if (position >= bytes.length) throw fail('unterminated escape sequence');
      const byte = bytes[position];
      position += 1;
      const simple = { 0x22: '"', 0x5c: '\\', 0x2f: '/', 0x62: '\b', 0x66: '\f', 0x6e: '\n', 0x72: '\r', 0x74: '\t' };
      if (simple[byte] !== undefined) {
        output.push(simple[byte]);
        return;
      }
      if (byte !== 0x75) {
        position -= 1;
        throw fail(`invalid escape \\${describe(byte)}`);
      }
      let code = hex4();
      if (code >= 0xd800 && code <= 0xdbff) {
        if (!(position + 1 < bytes.length && bytes[position] === 0x5c && bytes[position + 1] === 0x75)) throw fail('lone high surrogate in \\u escape');
        position += 2;
        const low = hex4();
        if (!(low >= 0xdc00 && low <= 0xdfff)) throw fail('high surrogate not followed by a low surrogate');
        code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
      } else if (code >= 0xdc00 && code <= 0xdfff) {
        throw fail('lone low surrogate in \\u escape');
      }
      output.push(String.fromCodePoint(code));
    };
    const string = () => {
      const start = position;
      position += 1;
      const parts = [];
      let runStart = position;
      const run = () => {
        try {
          parts.push(decoder.decode(bytes.subarray(runStart, position)));
        } catch (error) {
          throw fail('string is not valid UTF-8', start);
        }
      };
      while (position < bytes.length) {
        const byte = bytes[position];
        if (byte === 0x22) {
          run();
          position += 1;
          return parts.join('');
        }
        if (byte === 0x5c) {
          run();
          escape(parts);
          runStart = position;
        } else if (byte < 0x20) {
          throw fail(`control character ${describe(byte)} inside a string must be escaped`);
        } else {
          position += 1;
        }
      }
      throw fail('unterminated string', start);
    };
    const number = () => {
      const start = position;
      if (is('-')) position += 1;
      if (is('0')) position += 1;
      else if (position < bytes.length && bytes[position] >= 0x31 && bytes[position] <= 0x39) skipDigits();
      else throw fail('expected a digit');
      let isInteger = true;
      if (is('.')) {
        isInteger = false;
        position += 1;
        if (skipDigits() === 0) throw fail("expected a digit after '.'");
      }
      if (is('e') || is('E')) {
        isInteger = false;
        position += 1;
        if (is('+') || is('-')) position += 1;
        if (skipDigits() === 0) throw fail('expected a digit in the exponent');
      }
      const text = new TextDecoder().decode(bytes.subarray(start, position));
      // Swift's Int is 64 bits; past it the value is read as a Double, refused only if infinite.
      if (isInteger && BigInt(text) >= -(2n ** 63n) && BigInt(text) < 2n ** 63n) return;
      if (!Number.isFinite(Number(text))) throw fail(`number ${text} is out of range`, start);
    };
    const literal = (word) => {
      const matches = position + word.length <= bytes.length &&
        [...word].every((character, index) => bytes[position + index] === character.charCodeAt(0));
      if (!matches) throw fail(`unexpected ${describe(bytes[position])}, expected a value`);
      position += word.length;
    };
    const object = () => {
      enter();
      position += 1;
      const keys = new Set();
      skipWhitespace();
      if (is('}')) {
        position += 1;
        depth -= 1;
        return;
      }
      for (;;) {
        skipWhitespace();
        if (!is('"')) throw fail('expected a string key');
        const keyStart = position;
        const key = string();
        skipWhitespace();
        if (!is(':')) throw fail(`expected ':' after key "${peerText(key, 64)}"`);
        position += 1;
        skipWhitespace();
        if (keys.has(key)) throw fail(`duplicate key "${peerText(key, 64)}"`, keyStart);
        keys.add(key);
        value();
        skipWhitespace();
        if (is(',')) {
          position += 1;
          continue;
        }
        if (is('}')) {
          position += 1;
          depth -= 1;
          return;
        }
        throw fail("expected ',' or '}' in object");
      }
    };
    const array = () => {
      enter();
      position += 1;
      skipWhitespace();
      if (is(']')) {
        position += 1;
        depth -= 1;
        return;
      }
      for (;;) {
        skipWhitespace();
        value();
        skipWhitespace();
        if (is(',')) {
          position += 1;
          continue;
        }
        if (is(']')) {
          position += 1;
          depth -= 1;
          return;
        }
        throw fail("expected ',' or ']' in array");
      }
    };
    const value = () => {
      if (position >= bytes.length) throw fail('unexpected end of input, expected a value');
      const byte = bytes[position];
      if (byte === 0x7b) return object();
      if (byte === 0x5b) return array();
      if (byte === 0x22) return string();
      if (byte === 0x74) return literal('true');
      if (byte === 0x66) return literal('false');
      if (byte === 0x6e) return literal('null');
      if (byte === 0x2d || (byte >= 0x30 && byte <= 0x39)) return number();
      throw fail(`unexpected ${describe(byte)}, expected a value`);
    };
    skipWhitespace();
    value();
    skipWhitespace();
    if (position < bytes.length) throw fail(`unexpected ${describe(bytes[position])} after the end of the value`);
  }

  // ---------------------------------------------------------------------------------------
  // Timers that belong to the view on screen

  // Runs callback after milliseconds unless the page changed meanwhile; returns the timer.
  function later(callback, milliseconds) {
    const generation = state.generation;
    const timer = setTimeout(() => {
      state.timers.delete(timer);
      if (generation === state.generation) callback();
    }, milliseconds);
    state.timers.add(timer);
    return timer;
  }

  function stopTimers() {
    for (const timer of state.timers) clearTimeout(timer);
    state.timers.clear();
  }

  /// Whether the view that started some work is still the one shown.
  function current(generation) {
    return generation === state.generation;
  }

  // ---------------------------------------------------------------------------------------
  // Sign-in and sign-out

  async function signIn(event) {
    event.preventDefault();
    const input = $('api-key');
    const key = input.value.trim();
    const submit = $('signin-submit');
    if (!key) {
      showError($('signin-error'), 'Enter an API key.');
      input.focus();
      return;
    }
    submit.disabled = true;
    showError($('signin-error'), '');
    try {
      const answer = await api(['apps'], { key });
      const apps = Array.isArray(answer && answer.apps) ? answer.apps.filter((app) => app && typeof app.id === 'string') : [];
      if (apps.length === 0) {
        showError($('signin-error'), 'This API key may not use any app of this gateway.');
        return;
      }
      sessionStorage.setItem(KEY_STORAGE, key);
      input.value = '';
      state.apps = apps;
      enterConsole();
    } catch (error) {
      const message = error.status === 401
        ? `That key was refused: ${error.message.replace(/\.$/, '')}.`
        : error.message;
      showError($('signin-error'), message);
      input.select();
    } finally {
      submit.disabled = false;
    }
  }

  function signOut(message) {
    sessionStorage.removeItem(KEY_STORAGE);
    sessionStorage.clear();
    state.apps = [];
    state.app = null;
    state.generation += 1;
    stopTimers();
    showSignIn(message);
    if (location.hash) history.replaceState(null, '', location.pathname);
  }

  function showSignIn(message) {
    for (const id of ['app-switch', 'nav', 'signout']) show($(id), false);
    for (const view of document.querySelectorAll('.view')) show(view, false);
    show($('signin-view'), true);
    showError($('signin-error'), message || '');
    $('api-key').focus();
  }

  function enterConsole() {
    show($('signin-view'), false);
    showError($('signin-error'), '');
    show($('signout'), true);
    show($('nav'), true);
    show($('app-switch'), true);
    const picker = $('app-picker');
    clear(picker);
    for (const app of state.apps) picker.appendChild(el('option', { value: app.id }, app.id));
    const several = state.apps.length > 1;
    show(picker, several);
    show($('app-name'), !several);
    render();
  }

  // ---------------------------------------------------------------------------------------
  // Routing: #/apps/APP[/notifications/ID[/deliveries] | /devices[/TOKEN] | /templates[/NAME] | /users[/USER] | /send]

  function route() {
    const hash = location.hash.replace(/^#\/?/, '');
    const question = hash.indexOf('?');
    const path = question >= 0 ? hash.slice(0, question) : hash;
    const query = new URLSearchParams(question >= 0 ? hash.slice(question + 1) : '');
    const parts = path.split('/').filter(Boolean).map((part) => {
      try {
        return decodeURIComponent(part);
      } catch (error) {
        return '';
      }
    });
    return { parts, query };
  }

  function render() {
    state.generation += 1;
    stopTimers();
    if (!apiKey() || state.apps.length === 0) {
      showSignIn();
      return;
    }
    const { parts, query } = route();
    // The app comes only from the key's own list; anything else in the hash is ignored.
    const known = parts[0] === 'apps' && state.apps.some((app) => app.id === parts[1]);
    if (!known) {
      history.replaceState(null, '', href('apps', state.apps[0].id));
      render();
      return;
    }
    selectApp(parts[1]);
    const rest = parts.slice(2);
    for (const view of document.querySelectorAll('.view')) show(view, false);
    let active = 'overview';
    if (rest[0] === 'notifications' && rest[1] && rest[2] === 'deliveries') {
      showDeliveries(rest[1], query.get('outcome') || '');
    } else if (rest[0] === 'notifications' && rest[1]) {
      showNotification(rest[1]);
    } else if (rest[0] === 'devices' && rest[1]) {
      active = 'devices';
      showDevice(rest[1]);
    } else if (rest[0] === 'devices') {
      active = 'devices';
      showDevices(query);
    } else if (rest[0] === 'templates' && rest[1]) {
      active = 'templates';
      showTemplate(rest[1]);
    } else if (rest[0] === 'templates') {
      active = 'templates';
      showTemplates();
    } else if (rest[0] === 'users') {
      active = 'users';
      showUser(rest[1] || '');
    } else if (rest[0] === 'send') {
      active = 'send';
      showSend(query);
    } else {
      showOverview();
    }
    for (const name of ['overview', 'devices', 'templates', 'users', 'send']) {
      const link = $(`nav-${name}`);
      if (name === active) link.setAttribute('aria-current', 'page');
      else link.removeAttribute('aria-current');
    }
    window.scrollTo(0, 0);
  }

  function selectApp(id) {
    state.app = id;
    const app = state.apps.find((candidate) => candidate.id === id);
    $('app-picker').value = id;
    setText($('app-name'), id);
    // An app that reaches browsers only has no topic: it says so instead.
    const platforms = app && Array.isArray(app.platforms) ? app.platforms.map(String) : [];
    const others = [platforms.includes('webpush') ? 'browsers' : null, platforms.includes('fcm') ? 'Android' : null, platforms.includes('hms') ? 'Huawei' : null]
      .filter(Boolean).join(' and ');
    const reach = others ? (platforms.includes('apns') ? ` · and ${others}` : `${others} only`) : '';
    setText($('app-info'), app && app.topic ? `${app.topic} · ${app.environment || ''}${reach}` : reach);
    $('nav-overview').setAttribute('href', href('apps', id));
    $('nav-devices').setAttribute('href', href('apps', id, 'devices'));
    $('nav-templates').setAttribute('href', href('apps', id, 'templates'));
    $('nav-users').setAttribute('href', href('apps', id, 'users'));
    $('nav-send').setAttribute('href', href('apps', id, 'send'));
    $('brand').setAttribute('href', href('apps', id));
    document.title = `${id} · Herald console`;
  }

  // ---------------------------------------------------------------------------------------
  // Overview

  // `request` numbers the list's loads: only the latest one's answer is shown. A filter changed
  // while the list for the one before was loading (both within one generation) otherwise had
  // its answer overwritten by the older one's, when that came second.
  const overview = { status: '', next: null, request: 0 };

  function showOverview() {
    show($('overview-view'), true);
    const generation = state.generation;
    loadSummary(generation);
    loadDailyFunnel(generation);
    loadCategories(generation);
    overview.status = $('notifications-status').value;
    loadNotifications(generation, false);
  }

  async function loadSummary(generation) {
    const app = state.app;
    const [summary, activity] = await Promise.allSettled([
      api(['apps', app, 'summary']),
      api(['apps', app, 'activity'], { query: { minutes: 60 } }),
    ]);
    if (!current(generation)) return;
    const problems = [summary, activity].filter((result) => result.status === 'rejected').map((result) => result.reason.message);
    showError($('overview-error'), [...new Set(problems)].join(' '));
    if (summary.status === 'fulfilled') renderSummary(summary.value || {});
    if (activity.status === 'fulfilled') renderActivity((activity.value && activity.value.minutes) || []);
    later(() => loadSummary(generation), OVERVIEW_REFRESH_MS);
  }

  /// The app's categories (its configuration's): each one's kind, consent and caps.
  async function loadCategories(generation) {
    const list = $('categories-list');
    let answer;
    try {
      answer = await api(['apps', state.app, 'categories']);
    } catch (error) {
      if (current(generation)) showError($('categories-error'), error.message);
      return;
    }
    if (!current(generation)) return;
    showError($('categories-error'), '');
    renderCategories(list, answer || {});
  }

  function renderCategories(container, answer) {
    clear(container);
    const language = typeof answer.defaultLanguage === 'string' ? answer.defaultLanguage : null;
    setText($('categories-language'), language ? `Default language: ${language}` : 'No default language: each template\'s own');
    const categories = answer.categories && typeof answer.categories === 'object' ? Object.entries(answer.categories) : [];
    if (categories.length === 0) {
      container.appendChild(el('p', { class: 'empty', 'data-testid': 'categories-empty' },
        'No categories: they are set in the app\'s entry of the gateway\'s configuration (categories).'));
      return;
    }
    const rows = categories.map(([name, category]) => {
      const value = category && typeof category === 'object' ? category : {};
      const kind = value.transactional ? 'transactional' : value.commercial ? 'commercial' : 'neither';
      const consent = value.transactional ? 'always sent' : value.optIn ? 'opt-in' : 'opt-out';
      const caps = capsText(value.caps);
      return el('tr', { 'data-testid': 'category-row', 'data-category': name },
        cell(el('code', { 'data-testid': 'category-name' }, name)),
        cell(el('span', { 'data-testid': 'category-kind', class: `kind kind-${kind}` }, kind)),
        cell(el('span', { 'data-testid': 'category-consent' }, consent)),
        cell(caps ? el('span', { 'data-testid': 'category-caps' }, caps) : el('span', { class: 'muted', 'data-testid': 'category-caps' }, 'no cap')));
    });
    container.appendChild(table([{ title: 'Category' }, { title: 'Kind' }, { title: 'Users' }, { title: 'Caps (per user)' }], rows,
      { 'data-testid': 'categories-table' }));
  }

  function countList(node, prefix, entries) {
    clear(node);
    for (const [name, value] of entries) {
      node.appendChild(el('div', { class: 'count-row' },
        el('dt', {}, name),
        el('dd', { 'data-testid': `${prefix}-${name}` }, count(value))));
    }
  }

  function renderSummary(summary) {
    const devices = summary.devices || {};
    const byStatus = devices.byStatus || {};
    const byKind = devices.byKind || {};
    const byEnvironment = devices.byEnvironment || {};
    const byPlatform = devices.byPlatform || {};
    setText($('count-total'), count(devices.total));
    countList($('counts-status'), 'count-status', STATUSES.map((name) => [name, byStatus[name] || 0]));
    countList($('counts-platform'), 'count-platform', [...new Set([...PLATFORMS, ...Object.keys(byPlatform)])].map((name) => [name, byPlatform[name] || 0]));
    const kinds = Object.entries(byKind).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
    countList($('counts-kind'), 'count-kind', kinds);
    if (kinds.length === 0) $('counts-kind').appendChild(el('p', { class: 'empty' }, 'No devices yet.'));
    const environments = [...new Set([...ENVIRONMENTS, ...Object.keys(byEnvironment)])];
    countList($('counts-environment'), 'count-environment', environments.map((name) => [name, byEnvironment[name] || 0]));
    const queue = summary.queue || {};
    setText($('queue-pending'), count(queue.pendingDeliveries));
    setText($('queue-active'), count(queue.activeNotifications));
  }

  /// A step for the y axis that gives 2 to 5 round gridlines (1, 2 or 5 times a power of ten).
  function niceStep(maximum) {
    if (maximum <= 4) return 1;
    const rough = maximum / 4;
    const power = 10 ** Math.floor(Math.log10(rough));
    for (const factor of [1, 2, 5, 10]) if (factor * power >= rough) return factor * power;
    return 10 * power;
  }

  /// An SVG bar chart's frame, width × height units: a y scale from 0 to a round top at or above
  /// `peak`, its gridlines and labels, and the rotated y title. `attributes` go on the <svg>.
  function chartFrame(width, height, peak, yTitle, attributes) {
    const step = niceStep(peak);
    const top = Math.max(step, Math.ceil(peak / step) * step);
    // The left margin fits the widest y label (a 12px digit is about 7.6px wide, a comma half
    // that, so 7.5px a character holds) beside the
    // rotated axis title, so "150,000" is not clipped under it.
    const widest = numberFormat.format(top).length;
    const margin = { top: 12, right: 12, bottom: 40, left: Math.max(52, 36 + Math.ceil(widest * 7.5)) };
    const plotWidth = width - margin.left - margin.right;
    const plotHeight = height - margin.top - margin.bottom;
    const y = (value) => margin.top + plotHeight - (value / top) * plotHeight;

    const chart = svg('svg', { viewBox: `0 0 ${width} ${height}`, class: 'chart-svg', role: 'img', ...attributes });
    const grid = svg('g', { class: 'chart-grid' });
    const axisY = svg('g', { class: 'chart-axis' });
    for (let value = 0; value <= top; value += step) {
      grid.appendChild(svg('line', { x1: margin.left, x2: width - margin.right, y1: y(value), y2: y(value) }));
      axisY.appendChild(svg('text', { x: margin.left - 8, y: y(value) + 4, 'text-anchor': 'end' }, numberFormat.format(value)));
    }
    chart.appendChild(grid);
    chart.appendChild(axisY);
    chart.appendChild(svg('text', {
      class: 'chart-title', transform: `translate(14 ${margin.top + plotHeight / 2}) rotate(-90)`, 'text-anchor': 'middle',
    }, yTitle));
    return { chart, margin, plotWidth, plotHeight, y };
  }

  function renderActivity(minutes) {
    const container = $('activity-chart');
    clear(container);
    const width = 1100;
    const height = 250;
    const totals = { accepted: 0, rejected: 0, failed: 0 };
    let peak = 0;
    for (const minute of minutes) {
      for (const outcome of Object.keys(totals)) totals[outcome] += Number(minute[outcome]) || 0;
      peak = Math.max(peak, (Number(minute.accepted) || 0) + (Number(minute.rejected) || 0) + (Number(minute.failed) || 0));
    }
    const { chart, margin, plotWidth, plotHeight, y } = chartFrame(width, height, peak, 'per minute', {
      'data-testid': 'activity-svg',
      'aria-label': `Deliveries per minute over the last ${minutes.length} minutes: ${totals.accepted} accepted, ${totals.rejected} rejected, ${totals.failed} failed`,
    });
    const band = minutes.length ? plotWidth / minutes.length : plotWidth;

    const bars = svg('g', { class: 'chart-bars' });
    const axisX = svg('g', { class: 'chart-axis' });
    let lastLabel = -Infinity;
    minutes.forEach((minute, index) => {
      const x = margin.left + index * band;
      const date = new Date(minute.at);
      const label = Number.isNaN(date.getTime()) ? String(minute.at) : `${pad(date.getHours())}:${pad(date.getMinutes())}`;
      const group = svg('g', { 'data-testid': 'activity-minute' });
      group.appendChild(svg('title', {}, `${label}: ${minute.accepted || 0} accepted, ${minute.rejected || 0} rejected, ${minute.failed || 0} failed`));
      let base = 0;
      for (const outcome of ['accepted', 'rejected', 'failed']) {
        const value = Number(minute[outcome]) || 0;
        if (value > 0) {
          group.appendChild(svg('rect', {
            class: `bar bar-${outcome}`, x: x + band * 0.15, width: Math.max(1, band * 0.7),
            y: y(base + value), height: Math.max(1, y(base) - y(base + value)),
          }));
        }
        base += value;
      }
      // An invisible full-height target, so the tooltip shows for quiet minutes too.
      group.appendChild(svg('rect', { class: 'bar-hit', x, width: band, y: margin.top, height: plotHeight }));
      bars.appendChild(group);
      const everyTen = Number.isNaN(date.getTime()) ? index % 10 === 0 : date.getMinutes() % 10 === 0;
      // Every ten minutes, and now unless a label is close by.
      if (everyTen || (index === minutes.length - 1 && index - lastLabel >= 5)) {
        lastLabel = index;
        axisX.appendChild(svg('line', { class: 'tick', x1: x + band / 2, x2: x + band / 2, y1: margin.top + plotHeight, y2: margin.top + plotHeight + 4 }));
        axisX.appendChild(svg('text', { x: x + band / 2, y: margin.top + plotHeight + 18, 'text-anchor': 'middle' }, label));
      }
    });
    chart.appendChild(bars);
    chart.appendChild(svg('line', { class: 'chart-baseline', x1: margin.left, x2: width - margin.right, y1: y(0), y2: y(0) }));
    chart.appendChild(axisX);
    chart.appendChild(svg('text', { class: 'chart-title', x: margin.left + plotWidth / 2, y: height - 4, 'text-anchor': 'middle' }, 'local time'));
    container.appendChild(chart);

    clear($('activity-totals'));
    append($('activity-totals'), [
      'Last hour: ',
      el('span', { 'data-testid': 'activity-accepted' }, count(totals.accepted)), ' accepted, ',
      el('span', { 'data-testid': 'activity-rejected' }, count(totals.rejected)), ' rejected, ',
      el('span', { 'data-testid': 'activity-failed' }, count(totals.failed)), ' failed.',
    ]);
  }

  // ---------------------------------------------------------------------------------------
  // The overview's receipts chart: the app's funnel per day (GET /v1/apps/{app}/funnel)

  async function loadDailyFunnel(generation) {
    try {
      const answer = await api(['apps', state.app, 'funnel'], { query: { days: FUNNEL_DAYS } });
      if (!current(generation)) return;
      showError($('receipts-error'), '');
      renderDailyFunnel(Array.isArray(answer && answer.days) ? answer.days.filter((day) => day && typeof day === 'object') : []);
    } catch (error) {
      if (!current(generation)) return;
      showError($('receipts-error'), error.message);
    }
    later(() => loadDailyFunnel(generation), OVERVIEW_REFRESH_MS);
  }

  const dayFormat = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
  const longDayFormat = new Intl.DateTimeFormat(undefined, { weekday: 'short', year: 'numeric', month: 'short', day: 'numeric', timeZone: 'UTC' });

  /// A UTC day as the API names it ("2025-11-26"), shown short ("Nov 26") or long ("Wed, Nov 26, 2025").
  function dayText(day, long) {
    const date = new Date(`${day}T00:00:00Z`);
    if (typeof day !== 'string' || Number.isNaN(date.getTime())) return String(day);
    return (long ? longDayFormat : dayFormat).format(date);
  }

  function renderDailyFunnel(days) {
    const container = $('receipts-chart');
    clear(container);
    const width = 1100;
    const height = 250;
    const totals = { notifications: 0, targeted: 0, accepted: 0, received: 0, opened: 0, dismissed: 0, clicked: 0 };
    let peak = 0;
    for (const day of days) {
      for (const name of Object.keys(totals)) totals[name] += Number(day[name]) || 0;
      for (const name of DAILY_SERIES) peak = Math.max(peak, Number(day[name]) || 0);
    }
    const summary = `Last ${days.length} days (UTC): ${count(totals.notifications)} notifications, ${count(totals.accepted)} accepted, ` +
      `${count(totals.received)} received (${shareText(totals.received, totals.accepted)} of accepted), ` +
      `${count(totals.opened)} opened (${shareText(totals.opened, totals.accepted)} of accepted), ` +
      `${count(totals.dismissed)} dismissed, ${count(totals.clicked)} clicked`;
    const { chart, margin, plotWidth, plotHeight, y } = chartFrame(width, height, peak, 'per day', {
      'data-testid': 'receipts-svg', 'aria-label': `Receipts per day. ${summary}.`,
    });
    const band = days.length ? plotWidth / days.length : plotWidth;
    // Three bars a day, side by side, in the middle 76 % of the day's band.
    const barWidth = (band * 0.76) / DAILY_SERIES.length;
    const bars = svg('g', { class: 'chart-bars' });
    const axisX = svg('g', { class: 'chart-axis' });
    // A label under every day when they fit (about 70 units each), else under every other, …
    const every = Math.max(1, Math.ceil(70 / band));
    days.forEach((day, index) => {
      const x = margin.left + index * band;
      const group = svg('g', { 'data-testid': 'receipts-day', 'data-day': String(day.day) });
      group.appendChild(svg('title', {}, `${dayText(day.day, true)} (UTC): ${count(Number(day.notifications) || 0)} notifications, ` +
        `${count(Number(day.accepted) || 0)} accepted, ${count(Number(day.received) || 0)} received, ${count(Number(day.opened) || 0)} opened`));
      DAILY_SERIES.forEach((name, position) => {
        const value = Number(day[name]) || 0;
        if (value <= 0) return;
        group.appendChild(svg('rect', {
          class: `bar bar-${name}`, x: x + band * 0.12 + position * barWidth, width: Math.max(1, barWidth - 1),
          y: y(value), height: Math.max(1, y(0) - y(value)),
        }));
      });
      group.appendChild(svg('rect', { class: 'bar-hit', x, width: band, y: margin.top, height: plotHeight }));
      bars.appendChild(group);
      if ((days.length - 1 - index) % every === 0) {
        axisX.appendChild(svg('line', { class: 'tick', x1: x + band / 2, x2: x + band / 2, y1: margin.top + plotHeight, y2: margin.top + plotHeight + 4 }));
        axisX.appendChild(svg('text', { x: x + band / 2, y: margin.top + plotHeight + 18, 'text-anchor': 'middle' }, dayText(day.day, false)));
      }
    });
    chart.appendChild(bars);
    chart.appendChild(svg('line', { class: 'chart-baseline', x1: margin.left, x2: width - margin.right, y1: y(0), y2: y(0) }));
    chart.appendChild(axisX);
    chart.appendChild(svg('text', { class: 'chart-title', x: margin.left + plotWidth / 2, y: height - 4, 'text-anchor': 'middle' }, 'day queued (UTC)'));
    container.appendChild(chart);

    const line = $('receipts-totals');
    clear(line);
    const number = (name) => el('span', { 'data-testid': `receipts-${name}` }, count(totals[name]));
    append(line, [
      `Last ${days.length} days: `, number('notifications'), ' notifications, ', number('accepted'), ' accepted, ',
      number('received'), ' received (', el('span', { 'data-testid': 'receipts-received-rate' }, shareText(totals.received, totals.accepted)),
      ' of accepted), ', number('opened'), ' opened (', el('span', { 'data-testid': 'receipts-opened-rate' }, shareText(totals.opened, totals.accepted)),
      ' of accepted), ', number('dismissed'), ' dismissed, ', number('clicked'), ' clicked.',
    ]);

    // The same numbers as a table, newest day first, for reading (and for screen readers).
    const names = ['notifications', 'targeted', 'accepted', 'received', 'opened', 'dismissed', 'clicked'];
    const holder = $('receipts-table');
    clear(holder);
    holder.appendChild(table([{ title: 'Day (UTC)' }, ...names.map((name) => ({ title: name, numeric: true }))],
      days.slice().reverse().map((day) => el('tr', { 'data-testid': 'receipts-row', 'data-day': String(day.day) },
        cell(el('time', { datetime: String(day.day) }, dayText(day.day, true))),
        names.map((name) => el('td', { class: 'num', 'data-testid': `receipts-row-${name}` }, count(Number(day[name]) || 0))))),
      { 'data-testid': 'receipts-days-table' }));
  }

  function audienceText(notification) {
    const audience = notification.audience;
    if (!audience || typeof audience !== 'object') return '–';
    if (audience.type === 'all') return 'all devices';
    const sample = Array.isArray(audience.sample) ? audience.sample.map(String) : [];
    const shown = sample.slice(0, 2).map((value) => (audience.type === 'tokens' && value.length > 16 ? `${value.slice(0, 10)}…` : value));
    const more = (Number(audience.count) || sample.length) - shown.length;
    return `${audience.type}: ${shown.join(', ')}${more > 0 ? ` +${more}` : ''}`;
  }

  /// An ID short enough for a table: its start (its time) and its end (its random part).
  function shortID(id) {
    const text = String(id);
    return text.length > 16 ? `${text.slice(0, 8)}…${text.slice(-6)}` : text;
  }

  function skippedTotal(notification) {
    return SKIPS.reduce((sum, skip) => sum + (Number(notification[skip]) || 0), 0);
  }

  function rejectedTotal(notification) {
    const rejected = notification.rejected && typeof notification.rejected === 'object' ? notification.rejected : {};
    return Object.values(rejected).reduce((sum, value) => sum + (Number(value) || 0), 0);
  }

  async function loadNotifications(generation, more) {
    const button = $('notifications-more');
    button.disabled = true;
    const request = ++overview.request;
    const latest = () => current(generation) && request === overview.request;
    try {
      const answer = await api(['apps', state.app, 'notifications'], {
        query: { status: overview.status, limit: PAGE_SIZE, cursor: more ? overview.next : null },
      });
      if (!latest()) return;
      showError($('notifications-error'), '');
      const body = $('notifications-table').tBodies[0];
      if (!more) clear(body);
      const notifications = Array.isArray(answer.notifications) ? answer.notifications : [];
      for (const notification of notifications) body.appendChild(notificationRow(notification));
      overview.next = answer.next || null;
      show(button, Boolean(overview.next));
      show($('notifications-empty'), body.rows.length === 0);
    } catch (error) {
      if (latest()) showError($('notifications-error'), error.message);
    } finally {
      if (request === overview.request) button.disabled = false;
    }
  }

  function notificationRow(notification) {
    const link = href('apps', state.app, 'notifications', notification.id);
    const row = el('tr', { class: 'clickable', 'data-testid': 'notification-row', 'data-id': notification.id, 'data-href': link },
      cell(el('a', { href: link, title: notification.id }, el('code', {}, shortID(notification.id)))),
      cell(time(notification.createdAt)),
      // The audience wraps (a user ID may be long) rather than widening the table past the page.
      el('td', { class: 'audience' }, el('span', { class: 'audience-text' }, audienceText(notification))),
      cell(notification.pushType),
      cell(badge(notification.status)),
      cell(count(notification.targeted), true),
      cell(count(notification.accepted), true),
      cell(count(rejectedTotal(notification)), true),
      cell(count(notification.failed), true),
      skippedCell(notification));
    return row;
  }

  /// The devices held back without a fault, in one column: their total, and under it the kinds
  /// there are, "3 (2 opted out, 1 capped)", wrapping when the table is short of room; each
  /// kind's count is in a data attribute too (data-opted-out, data-capped, data-digested).
  function skippedCell(notification) {
    const parts = SKIPS.map((skip) => [skip, Number(notification[skip]) || 0]);
    const named = parts.filter(([, value]) => value > 0).map(([skip, value]) => `${count(value)} ${SKIP_NAMES[skip]}`);
    const attributes = { class: 'num skipped', 'data-testid': 'notification-row-skipped', title: named.length ? `Not sent: ${named.join(', ')}` : 'None held back' };
    for (const [skip, value] of parts) attributes[`data-${skip.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)}`] = String(value);
    return el('td', attributes, count(skippedTotal(notification)),
      named.length ? el('span', { class: 'skip-parts' }, ` (${named.join(', ')})`) : null);
  }

  // ---------------------------------------------------------------------------------------
  // A notification

  // poll: the timer of the next read of the notification, so that a read started at once (after
  // a cancel) replaces it rather than adding a second chain of reads. funnelSeen: the counts the
  // funnel shown was read for; funnelRequest numbers its reads, so only the latest is shown.
  const detail = { id: null, seen: '', poll: null, funnelSeen: '', funnelRequest: 0 };

  function showNotification(id) {
    show($('notification-view'), true);
    detail.id = id;
    detail.seen = '';
    detail.poll = null;
    detail.funnelSeen = '';
    clear($('funnel'));
    showError($('funnel-error'), '');
    for (const event of RECEIPT_EVENTS) setText($(`notification-count-${event}`), '–');
    setText($('notification-id'), id);
    setText($('notification-status'), '');
    $('notification-status').className = 'badge';
    show($('notification-body'), false);
    showError($('notification-error'), '');
    $('notification-back').setAttribute('href', href('apps', state.app));
    $('notification-deliveries-link').setAttribute('href', href('apps', state.app, 'notifications', id, 'deliveries'));
    resetCancel();
    pollNotification(state.generation);
  }

  async function pollNotification(generation) {
    if (detail.poll !== null) {
      clearTimeout(detail.poll);
      state.timers.delete(detail.poll);
      detail.poll = null;
    }
    let notification;
    try {
      notification = await api(['notifications', detail.id]);
    } catch (error) {
      if (!current(generation)) return;
      showError($('notification-error'), error.message);
      // A network blip while following a send: keep trying; a refusal (404, 403) is final.
      if (error.status === 0 || error.status >= 500) detail.poll = later(() => pollNotification(generation), POLL_MS * 3);
      return;
    }
    if (!current(generation)) return;
    showError($('notification-error'), '');
    renderNotification(notification);
    // A cancelled notification still counts what was in flight as it finishes (and what was
    // unsent as failed, "Cancelled"): it is followed until nothing is pending.
    const active = notification.status === 'queued' || notification.status === 'scheduled' || notification.status === 'sending' ||
      (notification.status === 'cancelled' && Number(notification.pending) > 0);
    show($('notification-live'), active);
    setText($('notification-live'), notification.status === 'scheduled' ? `checked every ${SCHEDULED_POLL_MS / 1000} seconds until it is due` : 'updating every second');
    // The device lists change only when the counts do; read them again only then.
    const seen = `${rejectedTotal(notification)}/${notification.failed}`;
    if (seen !== detail.seen) {
      detail.seen = seen;
      loadOutcomeList(generation, 'rejected', $('rejected-devices'));
      loadOutcomeList(generation, 'failed', $('failed-devices'));
    }
    // The funnel changes only when a delivery ends or a device reports: read it again only then.
    const receipts = notification.receipts && typeof notification.receipts === 'object' ? notification.receipts : {};
    const funnelSeen = [notification.accepted, rejectedTotal(notification), notification.failed, ...RECEIPT_EVENTS.map((event) => receipts[event])].join('/');
    if (funnelSeen !== detail.funnelSeen) {
      detail.funnelSeen = funnelSeen;
      loadFunnel(generation);
    }
    // Under way: every second (or, scheduled, until its time). Finished: its devices still
    // report receipts for days, so it is read again now and then while the page is open.
    detail.poll = later(() => pollNotification(generation), active ? nextPoll(notification) : RECEIPTS_POLL_MS);
  }

  async function loadFunnel(generation) {
    const request = ++detail.funnelRequest;
    const latest = () => current(generation) && request === detail.funnelRequest;
    try {
      const funnel = await api(['notifications', detail.id, 'funnel']);
      if (!latest()) return;
      showError($('funnel-error'), '');
      renderFunnel(funnel && typeof funnel === 'object' ? funnel : {});
    } catch (error) {
      if (!latest()) return;
      showError($('funnel-error'), error.message);
      detail.funnelSeen = ''; // read again on the next poll
    }
  }

  /// The funnel in all and by platform: a group of four horizontal bars each (sent, accepted,
  /// received, opened), each bar a share of the group's largest stage, with its count and rate as
  /// text beside it, then what else its devices reported and how long they took.
  function renderFunnel(funnel) {
    const container = $('funnel');
    clear(container);
    const platforms = Array.isArray(funnel.platforms) ? funnel.platforms.filter((platform) => platform && typeof platform === 'object') : [];
    const total = funnel.total && typeof funnel.total === 'object' ? funnel.total : {};
    container.appendChild(funnelGroup('total', 'All platforms', `${count(Number(funnel.targeted) || 0)} targeted`, total, false));
    for (const platform of platforms) container.appendChild(funnelGroup(String(platform.platform), String(platform.platform), null, platform, true));
    if (platforms.length === 0) {
      container.appendChild(el('p', { class: 'empty', 'data-testid': 'funnel-empty' }, 'Nothing sent yet, and no device has reported.'));
    }
  }

  function funnelGroup(key, title, note, stages, timed) {
    const values = FUNNEL_STAGES.map(({ stage }) => Math.max(0, Number(stages[stage]) || 0));
    const scale = Math.max(...values);
    const rates = stages.rates && typeof stages.rates === 'object' ? stages.rates : {};
    const list = el('ol', { class: 'funnel' }, FUNNEL_STAGES.map(({ stage, name, of }, index) => {
      const bar = el('span', { class: `funnel-bar funnel-bar-${stage}${values[index] > 0 ? ' funnel-bar-some' : ''}` });
      // Through the CSSOM: the CSP allows no style attribute.
      bar.style.width = scale > 0 ? `${(values[index] / scale) * 100}%` : '0';
      return el('li', { class: 'funnel-stage', 'data-testid': 'funnel-stage', 'data-stage': stage },
        el('span', { class: 'funnel-name' }, name),
        el('span', { class: 'funnel-track', 'aria-hidden': 'true' }, bar),
        el('span', { class: 'funnel-count', 'data-testid': 'funnel-count' }, count(values[index])),
        el('span', { class: 'funnel-rate', 'data-testid': 'funnel-rate' }, of ? `${percentText(rates[stage])} of ${of}` : ''));
    }));
    const also = el('p', { class: 'funnel-note' }, 'Also reported: ',
      el('span', { 'data-testid': 'funnel-dismissed' }, count(Math.max(0, Number(stages.dismissed) || 0))), ' dismissed, ',
      el('span', { 'data-testid': 'funnel-clicked' }, count(Math.max(0, Number(stages.clicked) || 0))), ' clicked.');
    const times = timed ? ['received', 'opened'].map((event) => {
      const field = stages[event === 'received' ? 'timeToReceivedMs' : 'timeToOpenedMs'];
      const latency = field && typeof field === 'object' ? field : null;
      return el('p', { class: 'funnel-note', 'data-testid': `funnel-time-${event}`, 'data-p50': latency ? latency.p50 : null, 'data-p95': latency ? latency.p95 : null },
        `Time to ${event}: `, latency ? `p50 ${durationText(latency.p50)}, p95 ${durationText(latency.p95)}` : 'none reported yet');
    }) : [el('p', { class: 'funnel-note' }, 'Times to received and opened are given by platform.')];
    return el('section', { class: `funnel-group funnel-group-${key === 'total' ? 'total' : 'platform'}`, 'data-testid': 'funnel-group', 'data-platform': key, 'aria-label': `Funnel, ${title}` },
      el('h3', {}, title, note ? el('span', { class: 'funnel-targeted' }, ` · ${note}`) : null),
      list, also, times);
  }

  // How long until the notification is read again: every second while it is under way; while
  // it is scheduled, every SCHEDULED_POLL_MS, or at its time (sendAt) when that comes sooner.
  function nextPoll(notification) {
    if (notification.status !== 'scheduled') return POLL_MS;
    const schedule = notification.schedule && typeof notification.schedule === 'object' ? notification.schedule : {};
    const at = typeof schedule.sendAt === 'string' ? Date.parse(schedule.sendAt) : NaN;
    const until = Number.isFinite(at) ? at - Date.now() : SCHEDULED_POLL_MS;
    return Math.min(SCHEDULED_POLL_MS, Math.max(POLL_MS, until));
  }

  function renderNotification(notification) {
    show($('notification-body'), true);
    setBadge($('notification-status'), notification.status);
    const targeted = Number(notification.targeted) || 0;
    const rejected = rejectedTotal(notification);
    // Devices held back (opted out, capped, digested) are done too: nothing more happens to them.
    const finished = (Number(notification.accepted) || 0) + rejected + (Number(notification.failed) || 0) + skippedTotal(notification);
    const percent = targeted > 0 ? Math.min(100, Math.round((finished / targeted) * 100)) : (notification.status === 'done' ? 100 : 0);
    const bar = $('notification-progress-bar');
    bar.style.width = `${percent}%`;
    bar.className = `progress-bar progress-${String(notification.status).replace(/[^a-z]/g, '')}`;
    const progress = $('notification-progress');
    progress.setAttribute('aria-valuenow', String(percent));
    progress.setAttribute('data-done', String(finished));
    progress.setAttribute('data-targeted', String(targeted));
    setText($('notification-progress-text'), `${count(finished)} of ${count(targeted)} devices done (${percent} %)`);
    setText($('notification-count-targeted'), count(targeted));
    setText($('notification-count-accepted'), count(notification.accepted));
    setText($('notification-count-rejected'), count(rejected));
    setText($('notification-count-failed'), count(notification.failed));
    for (const skip of SKIPS) setText($(`notification-count-${skip}`), count(Number(notification[skip]) || 0));
    setText($('notification-count-pending'), count(notification.pending));
    // DELETE's answer has no receipts: the counts shown stay until the next read.
    const receipts = notification.receipts && typeof notification.receipts === 'object' ? notification.receipts : null;
    if (receipts) for (const event of RECEIPT_EVENTS) setText($(`notification-count-${event}`), count(Math.max(0, Number(receipts[event]) || 0)));
    show($('notification-cancel'), ['queued', 'scheduled', 'sending'].includes(notification.status));

    const fields = $('notification-fields');
    clear(fields);
    const audience = notification.audience && typeof notification.audience === 'object' ? notification.audience : null;
    const byKind = notification.targetedByKind && typeof notification.targetedByKind === 'object'
      ? Object.entries(notification.targetedByKind).map(([kind, value]) => `${kind}: ${count(value)}`).join(', ')
      : '';
    const schedule = notification.schedule && typeof notification.schedule === 'object' ? notification.schedule : null;
    // Parts of a line, some of them elements (a time): joined by "; " as nodes, never as HTML.
    const timing = (schedule ? [
      schedule.sendAt ? ['from ', time(schedule.sendAt)] : null,
      schedule.sendAtLocalTime ? [`at ${schedule.sendAtLocalTime} in each device's time zone`] : null,
      schedule.respectQuietHours ? ['outside quiet hours'] : null,
      schedule.ratePerSecond ? [`at most ${count(schedule.ratePerSecond)} a second`] : null,
    ] : []).filter(Boolean).flatMap((part, index) => (index === 0 ? part : ['; ', ...part]));
    const template = notification.template && typeof notification.template === 'object' ? notification.template : null;
    const digest = notification.digest && typeof notification.digest === 'object' ? notification.digest : null;
    const rows = [
      ['App', notification.app],
      ['Push type', notification.pushType],
      ['Category', typeof notification.category === 'string'
        ? el('span', {}, el('code', { 'data-testid': 'notification-category' }, notification.category),
          notification.critical ? el('span', { class: 'muted', 'data-testid': 'notification-critical' }, ' · critical: passes its caps') : null)
        : null],
      ['Template', template
        ? el('a', { href: href('apps', state.app, 'templates', String(template.name)), 'data-testid': 'notification-template' },
          `${template.name} v${template.version}`)
        : null],
      ['Digest', digest
        ? el('span', {}, el('code', { 'data-testid': 'notification-digest' }, String(digest.key)),
          ` · gathers for ${windowText(digest.windowSeconds)}`,
          typeof digest.item === 'string' ? [' · item ', el('span', { class: 'user', 'data-testid': 'notification-digest-item' }, digest.item)] : null)
        : null],
      ['Audience', audience ? `${audience.type}${audience.type === 'all' ? '' : ` (${count(audience.count)} named)`}` : '–'],
      ['Named', audience && Array.isArray(audience.sample) && audience.sample.length
        ? el('ul', { class: 'sample' }, audience.sample.map((value) => el('li', {}, audience.type === 'tokens' ? el('code', { class: 'token-full' }, String(value)) : String(value))),
          Number(audience.count) > audience.sample.length ? el('li', { class: 'muted' }, `and ${count(audience.count - audience.sample.length)} more`) : null)
        : null],
      ['Targeted by kind', byKind || '–'],
      ['By platform', platformOutcomes(notification.platforms)],
      ['Sent', timing.length ? el('span', { 'data-testid': 'notification-schedule' }, ...timing) : null],
      ['Created', time(notification.createdAt)],
      ['Finished', time(notification.finishedAt)],
    ];
    for (const [name, value] of rows) {
      if (value === null) continue;
      fields.appendChild(el('div', { class: 'field-row' }, el('dt', {}, name), el('dd', {}, value)));
    }

    const reasons = $('rejected-reasons');
    clear(reasons);
    const byReason = notification.rejected && typeof notification.rejected === 'object' ? Object.entries(notification.rejected) : [];
    for (const [reason, value] of byReason.sort((a, b) => b[1] - a[1])) {
      reasons.appendChild(el('div', { class: 'count-row' }, el('dt', {}, reason), el('dd', { 'data-testid': 'rejected-reason-count', 'data-reason': reason }, count(value))));
    }
    show($('rejected-reasons-empty'), byReason.length === 0);
  }

  async function loadOutcomeList(generation, outcome, container) {
    try {
      const answer = await api(['notifications', detail.id, 'deliveries'], { query: { outcome, limit: PAGE_SIZE } });
      if (!current(generation)) return;
      renderDeliveries(container, answer, outcome, false, () => null);
    } catch (error) {
      if (current(generation)) {
        clear(container);
        container.appendChild(el('p', { class: 'form-error', role: 'alert' }, error.message));
      }
    }
  }

  /// What the platform gave back for a delivery: its receipt (an apns-id, a Web Push Location, an
  /// FCM message name) and, beside an APNs one, the apns-unique-id APNs's development environment
  /// gives (the Push Notifications Console finds the delivery log by it).
  function receiptCell(delivery) {
    const receipt = delivery.receipt || delivery.apnsID;
    if (!receipt) return el('span', { class: 'muted' }, '–');
    const code = el('code', { class: 'small', 'data-testid': 'delivery-receipt' }, receipt);
    if (!delivery.apnsUniqueID) return code;
    return el('span', {}, code, el('br'), el('span', { class: 'muted small' }, 'unique ID '),
      el('code', { class: 'small', 'data-testid': 'delivery-unique-id' }, delivery.apnsUniqueID));
  }

  /// A table of deliveries (token, outcome, reason, receipt, time), with a "More" button
  /// when `loadMore` is given and there is a next page.
  function renderDeliveries(container, answer, outcome, appendRows, loadMore) {
    const deliveries = Array.isArray(answer && answer.deliveries) ? answer.deliveries : [];
    let body = container.querySelector('tbody');
    if (!appendRows || !body) {
      clear(container);
      if (deliveries.length === 0) {
        container.appendChild(el('p', { class: 'empty' }, outcome ? `No ${OUTCOME_NAMES[outcome] || outcome} devices.` : 'No deliveries recorded yet.'));
        return;
      }
      container.appendChild(table([
        { title: 'Device token' }, { title: 'Outcome' }, { title: 'Reason' }, { title: 'Receipt' }, { title: 'At' },
      ], [], { 'data-testid': `deliveries-table-${outcome || 'all'}` }));
      body = container.querySelector('tbody');
    }
    for (const delivery of deliveries) {
      body.appendChild(el('tr', { 'data-testid': 'delivery-row', 'data-token': delivery.token, 'data-outcome': delivery.outcome },
        cell(el('a', { href: href('apps', state.app, 'devices', delivery.token) }, tokenText(delivery.token))),
        cell(badge(delivery.outcome)),
        cell(delivery.reason ? el('span', { 'data-testid': 'delivery-reason' }, delivery.reason) : el('span', { class: 'muted' }, '–')),
        cell(receiptCell(delivery)),
        cell(time(delivery.at))));
    }
    const old = container.querySelector('.more');
    if (old) old.remove();
    if (answer.next && loadMore) {
      const button = el('button', { type: 'button', class: 'button button-quiet more', 'data-testid': 'deliveries-more' }, 'More');
      button.addEventListener('click', () => {
        button.disabled = true;
        loadMore(answer.next);
      });
      container.appendChild(button);
    }
  }

  function resetCancel() {
    const button = $('notification-cancel');
    button.dataset.armed = '';
    button.disabled = false;
    setText(button, 'Cancel notification');
  }

  async function cancelNotification() {
    const button = $('notification-cancel');
    // Two clicks: the first arms it, so a stray click cancels nothing (no dialog: it would
    // block the page's polling).
    if (!button.dataset.armed) {
      button.dataset.armed = 'yes';
      setText(button, 'Click again to cancel what is unsent');
      later(resetCancel, 5000);
      return;
    }
    button.disabled = true;
    const generation = state.generation;
    try {
      const notification = await api(['notifications', detail.id], { method: 'DELETE' });
      if (!current(generation)) return;
      renderNotification(notification);
      pollNotification(generation);
    } catch (error) {
      if (current(generation)) showError($('notification-error'), error.message);
    } finally {
      resetCancel();
    }
  }

  // ---------------------------------------------------------------------------------------
  // All deliveries of a notification

  function showDeliveries(id, outcome) {
    show($('deliveries-view'), true);
    setText($('deliveries-id'), id);
    $('deliveries-back').setAttribute('href', href('apps', state.app, 'notifications', id));
    const select = $('deliveries-outcome');
    select.value = OUTCOMES.includes(outcome) ? outcome : '';
    showError($('deliveries-error'), '');
    const container = $('deliveries-list');
    clear(container);
    container.appendChild(el('p', { class: 'muted' }, 'Loading…'));
    const generation = state.generation;
    const load = async (cursor) => {
      try {
        const answer = await api(['notifications', id, 'deliveries'], { query: { outcome: select.value, limit: PAGE_SIZE, cursor } });
        if (current(generation)) renderDeliveries(container, answer, select.value, Boolean(cursor), load);
      } catch (error) {
        if (current(generation)) {
          clear(container);
          showError($('deliveries-error'), error.message);
        }
      }
    };
    load(null);
  }

  // ---------------------------------------------------------------------------------------
  // Devices

  function showDevices(query) {
    show($('devices-view'), true);
    const by = ['token', 'user', 'tag'].includes(query.get('by')) ? query.get('by') : 'user';
    const value = query.get('q') || '';
    const status = query.get('status') || '';
    $('device-search-by').value = by;
    $('device-search-value').value = value;
    $('device-search-status').value = status;
    showError($('devices-error'), '');
    if (!query.has('by')) {
      show($('devices-results'), false);
      $('device-search-value').focus();
      return;
    }
    searchDevices(state.generation, by, value, status);
  }

  function submitDeviceSearch(event) {
    event.preventDefault();
    const by = $('device-search-by').value;
    const value = $('device-search-value').value.trim();
    const status = $('device-search-status').value;
    if (by === 'token') {
      if (!value) {
        showError($('devices-error'), 'Enter a device token (hex), a browser\'s ID (wp_…), or an Android device\'s ID or FCM token.');
        return;
      }
      location.hash = href('apps', state.app, 'devices', value);
      return;
    }
    const target = hrefWithQuery(['apps', state.app, 'devices'], { by, q: value, status });
    // The same search again (to refresh) does not change the hash, so run it directly.
    if (location.hash === target) render();
    else location.hash = target;
  }

  async function searchDevices(generation, by, value, status) {
    const results = $('devices-results');
    const list = $('devices-list');
    const what = value ? `${by} “${value}”` : 'all devices';
    setText($('devices-heading'), `Devices for ${what}${status ? `, ${status}` : ''}`);
    clear(list);
    list.appendChild(el('p', { class: 'muted' }, 'Searching…'));
    show(results, true);
    const query = { status, limit: PAGE_SIZE };
    if (value) query[by] = value;
    const load = async (cursor) => {
      try {
        const answer = await api(['apps', state.app, 'devices'], { query: { ...query, cursor } });
        if (current(generation)) renderDeviceList(list, answer, Boolean(cursor), load);
      } catch (error) {
        if (current(generation)) {
          show(results, false);
          showError($('devices-error'), error.message);
        }
      }
    };
    load(null);
  }

  function renderDeviceList(container, answer, appendRows, loadMore) {
    const devices = Array.isArray(answer && answer.devices) ? answer.devices : [];
    let body = container.querySelector('tbody');
    if (!appendRows || !body) {
      clear(container);
      if (devices.length === 0) {
        container.appendChild(el('p', { class: 'empty', 'data-testid': 'devices-empty' }, 'No devices match.'));
        return;
      }
      container.appendChild(table([
        { title: 'Device' }, { title: 'Platform' }, { title: 'User' }, { title: 'Tags' }, { title: 'Kind' }, { title: 'Environment' },
        { title: 'Status' }, { title: 'Updated' },
      ], [], { 'data-testid': 'devices-table' }));
      body = container.querySelector('tbody');
    }
    for (const device of devices) {
      const link = href('apps', state.app, 'devices', device.token);
      body.appendChild(el('tr', { class: 'clickable', 'data-testid': 'device-row', 'data-token': device.token, 'data-href': link },
        cell(el('a', { href: link }, tokenText(device.token))),
        cell(el('span', { 'data-testid': 'device-platform' }, device.platform || 'apns')),
        cell(device.user === null || device.user === undefined ? el('span', { class: 'muted' }, '–') : el('span', { class: 'user', 'data-testid': 'device-user' }, device.user)),
        cell(tagList(device.tags)),
        // Kinds and environments are APNs's: another platform's device has neither.
        cell((device.platform || 'apns') !== 'apns' ? el('span', { class: 'muted' }, '–') : device.kind),
        cell((device.platform || 'apns') !== 'apns' ? el('span', { class: 'muted' }, '–') : device.environment),
        cell(badge(device.status)),
        cell(time(device.updatedAt))));
    }
    const old = container.querySelector('.more');
    if (old) old.remove();
    if (answer.next) {
      const button = el('button', { type: 'button', class: 'button button-quiet more', 'data-testid': 'devices-more' }, 'More');
      button.addEventListener('click', () => {
        button.disabled = true;
        loadMore(answer.next);
      });
      container.appendChild(button);
    }
  }

  /// A notification's outcomes by platform, one line each: "apns: 3 accepted, 1 rejected, 0 failed".
  function platformOutcomes(platforms) {
    if (!platforms || typeof platforms !== 'object') return null;
    const lines = Object.entries(platforms).filter(([, value]) => value && typeof value === 'object').map(([name, value]) =>
      el('li', { 'data-testid': 'platform-outcomes', 'data-platform': name },
        `${name}: ${count(value.accepted)} accepted, ${count(value.rejected)} rejected, ${count(value.failed)} failed`));
    return lines.length ? el('ul', { class: 'sample' }, lines) : null;
  }

  function tagList(tags) {
    if (!Array.isArray(tags) || tags.length === 0) return el('span', { class: 'muted' }, '–');
    return el('span', { class: 'tags' }, tags.map((tag) => el('span', { class: 'tag' }, tag)));
  }

  async function showDevice(token) {
    show($('device-view'), true);
    show($('device-card'), false);
    showError($('device-error'), '');
    setText($('device-status'), '');
    $('device-status').className = 'badge';
    $('device-back').setAttribute('href', href('apps', state.app, 'devices'));
    const generation = state.generation;
    try {
      const device = await api(['apps', state.app, 'devices', token]);
      if (!current(generation)) return;
      renderDevice(device);
    } catch (error) {
      if (current(generation)) showError($('device-error'), error.message);
    }
  }

  function renderDevice(device) {
    setBadge($('device-status'), device.status);
    const fields = $('device-fields');
    clear(fields);
    const missing = () => el('span', { class: 'muted' }, '–');
    const notAPNs = (device.platform || 'apns') !== 'apns';
    const rows = [
      ['token', notAPNs ? 'ID' : 'Token', el('code', { class: 'token-full' }, device.token)],
      ['platform', 'Platform', device.platform || 'apns'],
      ['pushService', 'Push service', device.platform === 'webpush' ? (device.pushService ? el('code', {}, device.pushService) : missing()) : null],
      ['registrationToken', 'FCM token', device.platform === 'fcm' ? el('code', { class: 'token-full' }, device.registrationToken || '') : null],
      ['pushToken', 'Push Kit token', device.platform === 'hms' ? el('code', { class: 'token-full' }, device.pushToken || '') : null],
      ['hmsAPI', 'Push Kit API', device.platform === 'hms' ? (device.hmsAPI === 'harmony' ? 'HarmonyOS NEXT (v3)' : 'Android (v1)') : null],
      ['user', 'User', device.user === null || device.user === undefined ? missing() : el('span', { class: 'user' }, device.user)],
      ['tags', 'Tags', tagList(device.tags)],
      ['badge', 'Badge', device.badge === null || device.badge === undefined ? missing() : count(device.badge)],
      ['status', 'Status', badge(device.status)],
      ['reason', 'Reason', device.reason || missing()],
      ['kind', 'Kind', notAPNs ? null : device.kind],
      ['activityType', 'Activity type', device.activityType === undefined ? null : (device.activityType || missing())],
      ['environment', 'Environment', notAPNs ? null : device.environment],
      ['createdAt', 'Registered', time(device.createdAt)],
      ['updatedAt', 'Updated', time(device.updatedAt)],
      ['invalidatedAt', 'Invalidated', time(device.invalidatedAt)],
    ];
    for (const [key, name, value] of rows) {
      if (value === null) continue;
      fields.appendChild(el('div', { class: 'field-row' }, el('dt', {}, name), el('dd', { 'data-testid': `device-field-${key}` }, value)));
    }
    $('device-send').setAttribute('href', hrefWithQuery(['apps', state.app, 'send'], { token: device.token }));
    show($('device-card'), true);
  }

  // ---------------------------------------------------------------------------------------
  // Templates

  function showTemplates() {
    show($('templates-view'), true);
    showError($('templates-error'), '');
    const container = $('templates-list');
    clear(container);
    container.appendChild(el('p', { class: 'muted' }, 'Loading…'));
    const generation = state.generation;
    const load = async (cursor) => {
      try {
        const answer = await api(['apps', state.app, 'templates'], { query: { limit: 50, cursor } });
        if (current(generation)) renderTemplateList(container, answer, Boolean(cursor), load);
      } catch (error) {
        if (current(generation)) {
          clear(container);
          showError($('templates-error'), error.message);
        }
      }
    };
    load(null);
  }

  function listText(values) {
    const list = Array.isArray(values) ? values.map(String) : [];
    return list.length ? list.join(', ') : el('span', { class: 'muted' }, '–');
  }

  function renderTemplateList(container, answer, appendRows, loadMore) {
    const templates = Array.isArray(answer && answer.templates) ? answer.templates.filter((t) => t && typeof t.name === 'string') : [];
    let body = container.querySelector('tbody');
    if (!appendRows || !body) {
      clear(container);
      if (templates.length === 0) {
        container.appendChild(el('p', { class: 'empty', 'data-testid': 'templates-empty' }, `App ${state.app} has no templates yet.`));
        return;
      }
      container.appendChild(table([
        { title: 'Name' }, { title: 'Version', numeric: true }, { title: 'Languages' }, { title: 'Variables' }, { title: 'Updated' },
      ], [], { 'data-testid': 'templates-table' }));
      body = container.querySelector('tbody');
    }
    for (const template of templates) {
      const link = href('apps', state.app, 'templates', template.name);
      const required = new Set(Array.isArray(template.requiredVariables) ? template.requiredVariables.map(String) : []);
      const variables = Array.isArray(template.variables) ? template.variables.map(String) : [];
      body.appendChild(el('tr', { class: 'clickable', 'data-testid': 'template-row', 'data-name': template.name, 'data-href': link },
        cell(el('a', { href: link, 'data-testid': 'template-row-name' }, template.name)),
        cell(`v${template.version}`, true),
        cell(el('span', { 'data-testid': 'template-row-languages' }, listText(template.languages))),
        cell(variables.length
          ? el('span', { class: 'tags', 'data-testid': 'template-row-variables' }, variables.map((name) =>
            el('span', { class: required.has(name) ? 'tag tag-required' : 'tag', title: required.has(name) ? 'required' : 'has a default' }, name)))
          : el('span', { class: 'muted', 'data-testid': 'template-row-variables' }, '–')),
        cell(time(template.updatedAt))));
    }
    const old = container.querySelector('.more');
    if (old) old.remove();
    if (answer.next) {
      const button = el('button', { type: 'button', class: 'button button-quiet more', 'data-testid': 'templates-more' }, 'More');
      button.addEventListener('click', () => {
        button.disabled = true;
        loadMore(answer.next);
      });
      container.appendChild(button);
    }
  }

  // The template shown, for its preview.
  const templateDetail = { name: null, request: 0 };

  async function showTemplate(name) {
    show($('template-view'), true);
    show($('template-body'), false);
    show($('template-preview-result'), false);
    showError($('template-error'), '');
    showError($('template-preview-error'), '');
    setText($('template-name'), name);
    setBadge($('template-version'), '');
    $('template-back').setAttribute('href', href('apps', state.app, 'templates'));
    templateDetail.name = name;
    const generation = state.generation;
    try {
      const template = await api(['apps', state.app, 'templates', name]);
      if (!current(generation)) return;
      renderTemplate(template || {});
    } catch (error) {
      if (current(generation)) showError($('template-error'), error.message);
    }
  }

  function renderTemplate(template) {
    const version = $('template-version');
    version.className = 'badge';
    setText(version, `v${template.version}`);
    const languages = Array.isArray(template.languages) ? template.languages.map(String) : [];
    const required = Array.isArray(template.requiredVariables) ? template.requiredVariables.map(String) : [];
    const fields = $('template-fields');
    clear(fields);
    const rows = [
      ['defaultLanguage', 'Default language', template.defaultLanguage],
      ['languages', 'Languages', listText(languages)],
      ['variables', 'Variables', listText(template.variables)],
      ['requiredVariables', 'Required variables', listText(required)],
      ['updatedAt', 'Updated', time(template.updatedAt)],
    ];
    for (const [key, name, value] of rows) {
      fields.appendChild(el('div', { class: 'field-row' }, el('dt', {}, name), el('dd', { 'data-testid': `template-field-${key}` }, value)));
    }

    const stored = template.template && typeof template.template === 'object' ? template.template : {};
    const variants = stored.variants && typeof stored.variants === 'object' ? Object.entries(stored.variants) : [];
    const names = ['title', 'subtitle', 'body', 'navigate', 'clickAction'];
    const container = $('template-variants');
    clear(container);
    container.appendChild(table([{ title: 'Language' }, ...names.map((name) => ({ title: name }))],
      variants.map(([language, variant]) => {
        const value = variant && typeof variant === 'object' ? variant : {};
        return el('tr', { 'data-testid': 'template-variant', 'data-language': language },
          cell(el('code', {}, language), false),
          names.map((name) => el('td', { class: 'template-text', 'data-testid': `template-variant-${name}` },
            typeof value[name] === 'string' ? value[name] : el('span', { class: 'muted' }, '–'))));
      }), { 'data-testid': 'template-variants-table' }));
    const data = stored.data && typeof stored.data === 'object' ? stored.data : null;
    setText($('template-data'), data ? JSON.stringify(data, null, 2) : '');
    show($('template-data-wrap'), Boolean(data));

    const picker = $('template-preview-language');
    clear(picker);
    picker.appendChild(el('option', { value: '' }, 'none (a device without a locale)'));
    for (const language of languages) picker.appendChild(el('option', { value: language }, language));
    picker.value = languages.includes(template.defaultLanguage) ? template.defaultLanguage : '';
    $('template-preview-locale').value = '';
    // The required variables, to fill in.
    const sample = {};
    for (const name of required) sample[name] = '';
    $('template-preview-data').value = JSON.stringify(sample, null, 2);
    show($('template-body'), true);
  }

  async function submitPreview(event) {
    event.preventDefault();
    const typed = $('template-preview-locale').value.trim();
    const locale = typed || $('template-preview-language').value;
    const text = $('template-preview-data').value;
    let data;
    try {
      data = text.trim() === '' ? {} : JSON.parse(text);
    } catch (error) {
      data = undefined;
    }
    if (!data || typeof data !== 'object' || Array.isArray(data)) {
      showError($('template-preview-error'), 'Data: must be a JSON object of the variables, e.g. {"order": "1234"}');
      show($('template-preview-result'), false);
      return;
    }
    showError($('template-preview-error'), '');
    const body = { data };
    if (locale) body.locale = locale;
    const button = $('template-preview-submit');
    button.disabled = true;
    const generation = state.generation;
    const request = ++templateDetail.request;
    const latest = () => current(generation) && request === templateDetail.request;
    try {
      const answer = await api(['apps', state.app, 'templates', templateDetail.name, 'preview'], { method: 'POST', body: JSON.stringify(body) });
      if (latest()) renderPreview(answer || {}, locale);
    } catch (error) {
      if (latest()) {
        show($('template-preview-result'), false);
        showError($('template-preview-error'), error.message);
      }
    } finally {
      if (request === templateDetail.request) button.disabled = false;
    }
  }

  function renderPreview(answer, locale) {
    const payload = answer.payload && typeof answer.payload === 'object' ? answer.payload : {};
    const aps = payload.aps && typeof payload.aps === 'object' ? payload.aps : {};
    const alert = aps.alert && typeof aps.alert === 'object' ? aps.alert : (typeof aps.alert === 'string' ? { body: aps.alert } : {});
    setText($('template-preview-used'), `· ${answer.language} variant${locale ? ` for ${locale}` : ''}`);
    for (const name of ['title', 'subtitle', 'body']) {
      const node = $(`template-preview-${name}`);
      setText(node, typeof alert[name] === 'string' ? alert[name] : '');
      show(node, typeof alert[name] === 'string');
    }
    setText($('template-preview-payload'), JSON.stringify(payload, null, 2));
    const options = $('template-preview-options');
    clear(options);
    if (answer.webPush !== undefined) options.appendChild(el('div', {}, el('h3', {}, 'Web Push options'), jsonBlock(answer.webPush, { 'data-testid': 'template-preview-webpush' })));
    if (answer.fcm !== undefined) options.appendChild(el('div', {}, el('h3', {}, 'FCM options'), jsonBlock(answer.fcm, { 'data-testid': 'template-preview-fcm' })));
    show($('template-preview-result'), true);
  }

  // ---------------------------------------------------------------------------------------
  // A user's preferences

  // The user shown and what the API answered for them, for the form's Save.
  const userDetail = { user: null, preferences: null, known: {} };

  function submitUserSearch(event) {
    event.preventDefault();
    const user = $('user-search-value').value.trim();
    if (!user) {
      showError($('user-error'), 'Enter a user ID, as devices register it.');
      return;
    }
    const target = href('apps', state.app, 'users', user);
    // The same user again (to refresh) does not change the hash, so show it directly.
    if (location.hash === target) render();
    else location.hash = target;
  }

  async function showUser(user) {
    show($('users-view'), true);
    show($('user-preferences'), false);
    showError($('user-error'), '');
    showError($('user-save-error'), '');
    showError($('user-saved'), '');
    $('user-search-value').value = user;
    userDetail.user = user || null;
    userDetail.preferences = null;
    userDetail.known = {};
    if (!user) {
      $('user-search-value').focus();
      return;
    }
    const generation = state.generation;
    const [preferences, categories] = await Promise.allSettled([
      api(['apps', state.app, 'users', user, 'preferences']),
      api(['apps', state.app, 'categories']),
    ]);
    if (!current(generation)) return;
    if (preferences.status === 'rejected') {
      showError($('user-error'), preferences.reason.message);
      return;
    }
    const known = categories.status === 'fulfilled' && categories.value && typeof categories.value.categories === 'object'
      ? categories.value.categories : {};
    userDetail.known = known;
    renderPreferences(preferences.value || {}, known);
  }

  /// A choice as the API gives it (true, false, or {"all"?, "webpush"?, …}) in words.
  function choiceText(choice) {
    if (choice === true) return 'receives';
    if (choice === false) return 'opted out';
    if (!choice || typeof choice !== 'object') return '–';
    return Object.entries(choice).map(([platform, enabled]) =>
      `${platform === 'all' ? 'every platform' : platform}: ${enabled ? 'receives' : 'opted out'}`).join(', ');
  }

  function renderPreferences(preferences, known) {
    userDetail.preferences = preferences;
    setText($('user-name'), preferences.user);
    setText($('user-updated'), preferences.updatedAt ? '' : 'No choices stored: every category is at its default.');
    if (preferences.updatedAt) append($('user-updated'), ['Choices last set ', time(preferences.updatedAt), '.']);
    const choices = preferences.categories && typeof preferences.categories === 'object' ? preferences.categories : {};
    const defaults = preferences.defaults && typeof preferences.defaults === 'object' ? preferences.defaults : {};
    const names = [...new Set([...Object.keys(known), ...Object.keys(defaults), ...Object.keys(choices)])].sort();
    const container = $('user-categories');
    clear(container);
    if (names.length === 0) {
      container.appendChild(el('p', { class: 'empty' }, 'The app has no categories to choose.'));
      show($('user-save'), false);
      show($('user-preferences'), true);
      return;
    }
    const rows = names.map((name) => {
      const category = known[name] && typeof known[name] === 'object' ? known[name] : {};
      const transactional = Boolean(category.transactional) && !(name in defaults);
      const has = Object.prototype.hasOwnProperty.call(choices, name);
      const choice = choices[name];
      const fallback = defaults[name];
      let control;
      if (transactional) {
        control = el('span', { class: 'muted' }, 'transactional: always sent');
      } else {
        const select = el('select', { 'data-testid': 'user-choice-select', 'data-category': name, 'aria-label': `Choice for ${name}` },
          el('option', { value: 'default' }, `default (${fallback === false ? 'not received' : 'received'})`),
          el('option', { value: 'on' }, 'receives'),
          el('option', { value: 'off' }, 'opted out'),
          has && typeof choice === 'object' && choice !== null ? el('option', { value: 'custom' }, `as stored: ${choiceText(choice)}`) : null);
        select.value = !has ? 'default' : choice === true ? 'on' : choice === false ? 'off' : 'custom';
        control = select;
      }
      return el('tr', { 'data-testid': 'user-category', 'data-category': name },
        cell(el('code', {}, name)),
        cell(el('span', { 'data-testid': 'user-choice' }, has ? choiceText(choice) : el('span', { class: 'muted' }, 'no choice'))),
        cell(el('span', { 'data-testid': 'user-default' },
          transactional ? 'always sent' : fallback === undefined ? '–' : fallback ? 'received (opt-out)' : 'not received (opt-in)')),
        cell(control));
    });
    container.appendChild(table([{ title: 'Category' }, { title: 'Choice' }, { title: 'Default' }, { title: 'Change' }], rows,
      { 'data-testid': 'user-categories-table' }));
    show($('user-save'), true);
    show($('user-preferences'), true);
  }

  async function submitPreferences(event) {
    event.preventDefault();
    const preferences = userDetail.preferences;
    if (!preferences || !userDetail.user) return;
    const stored = preferences.categories && typeof preferences.categories === 'object' ? preferences.categories : {};
    const categories = {};
    for (const select of $('user-categories').querySelectorAll('select[data-category]')) {
      const name = select.getAttribute('data-category');
      if (select.value === 'on') categories[name] = true;
      else if (select.value === 'off') categories[name] = false;
      else if (select.value === 'custom' && Object.prototype.hasOwnProperty.call(stored, name)) categories[name] = stored[name];
    }
    const button = $('user-save');
    button.disabled = true;
    showError($('user-save-error'), '');
    showError($('user-saved'), '');
    const generation = state.generation;
    const user = userDetail.user;
    try {
      const answer = await api(['apps', state.app, 'users', user, 'preferences'], { method: 'PUT', body: JSON.stringify({ categories }) });
      if (!current(generation)) return;
      renderPreferences(answer || {}, userDetail.known);
      showError($('user-saved'), 'Saved.');
    } catch (error) {
      if (current(generation)) showError($('user-save-error'), error.message);
    } finally {
      button.disabled = false;
    }
  }

  // ---------------------------------------------------------------------------------------
  // Send a test notification

  function showSend(query) {
    show($('send-view'), true);
    setText($('send-app'), state.app);
    showError($('send-error'), '');
    showError($('send-error-hint'), '');
    if (query.get('token')) {
      $('send-target-type').value = 'token';
      $('send-target-value').value = query.get('token');
    } else if (query.get('user')) {
      $('send-target-type').value = 'user';
      $('send-target-value').value = query.get('user');
    }
    updateTargetLabel();
  }

  function updateTargetLabel() {
    setText($('send-target-label'), $('send-target-type').value === 'user' ? 'User' : 'Device token');
  }

  /// The request body, written as the gateway will read it: the payload exactly as typed, so a
  /// mistake in it is reported at the byte where the gateway would find it. `payloadAt` is
  /// where the payload starts, in bytes.
  function sendBody(type, value, payloadText, pushType, sendAt) {
    const to = type === 'user' ? { users: [value] } : { tokens: [value] };
    const head = `{"to":${JSON.stringify(to)},"payload":`;
    const scheduled = sendAt ? `,"sendAt":${JSON.stringify(sendAt)}` : '';
    const encoder = new TextEncoder();
    return {
      bytes: encoder.encode(`${head}${payloadText},"pushType":${JSON.stringify(pushType)}${scheduled}}`),
      payloadAt: encoder.encode(head).length,
    };
  }

  /// The Send at field (a local date and time, no zone) as the API's RFC 3339 time in UTC, to
  /// the second; '' when empty, null when the browser holds no valid time in it.
  function sendAtTime(local) {
    if (local === '') return '';
    const date = new Date(local);
    if (Number.isNaN(date.getTime())) return null;
    return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
  }

  /// What the gateway would answer for this body, found here first, in the gateway's order:
  /// the body's JSON, then the audience. Null when it would take it this far.
  function localRefusal(type, value, payloadText, body) {
    try {
      checkJSON(body.bytes);
    } catch (error) {
      if (!(error instanceof JSONParseError)) throw error;
      return { message: `the body is not valid JSON: ${error.message}`, offset: error.offset };
    }
    if (type === 'token' && value === '') return { message: 'to.tokens[0]: device token is empty' };
    if (type === 'user' && value === '') return { message: 'to.users[0]: must be 1 to 256 bytes without control characters' };
    // The body parsed, but the payload text alone must be one value: text such as
    // `{}, "priority": 5` would otherwise add fields to the request.
    try {
      JSON.parse(payloadText);
    } catch (error) {
      return { message: 'payload: must be a single JSON object, e.g. {"aps": {"alert": "Hi"}}' };
    }
    return null;
  }

  /// The gateway counts bytes of the whole body; the person typing needs a place in the field.
  /// Points there (line and column, and the caret) when the mistake is in the payload.
  function pointAtPayload(payloadText, body, offset) {
    const payloadBytes = new TextEncoder().encode(payloadText);
    const at = offset - body.payloadAt;
    if (offset === undefined || at < 0 || at > payloadBytes.length) return '';
    const before = new TextDecoder().decode(payloadBytes.subarray(0, at));
    const lines = before.split('\n');
    const where = `line ${lines.length}, column ${lines[lines.length - 1].length + 1}`;
    const field = $('send-payload');
    field.focus();
    field.setSelectionRange(before.length, Math.min(payloadText.length, before.length + 1));
    return at === payloadBytes.length
      ? `The payload ends before its JSON does (${where} of the payload field).`
      : `In the payload field: ${where}.`;
  }

  async function submitSend(event) {
    event.preventDefault();
    const type = $('send-target-type').value === 'user' ? 'user' : 'token';
    const value = $('send-target-value').value;
    const payloadText = $('send-payload').value;
    const pushType = $('send-push-type').value;
    const sendAt = sendAtTime($('send-at').value);
    const body = sendBody(type, value, payloadText, pushType, sendAt);
    const refusal = sendAt === null ? { message: 'Send at: not a complete date and time; clear it to send now' }
      : localRefusal(type, value, payloadText, body);
    showError($('send-error'), refusal ? refusal.message : '');
    showError($('send-error-hint'), refusal ? pointAtPayload(payloadText, body, refusal.offset) : '');
    if (refusal) return;
    const button = $('send-submit');
    button.disabled = true;
    // The app is the one picked from the key's list, never anything typed in the form.
    const app = state.app;
    const generation = state.generation;
    try {
      const answer = await api(['apps', app, 'notifications'], { method: 'POST', body: body.bytes });
      if (!current(generation)) return;
      location.hash = href('apps', app, 'notifications', answer.id);
    } catch (error) {
      if (current(generation)) showError($('send-error'), error.message);
    } finally {
      button.disabled = false;
    }
  }

  // ---------------------------------------------------------------------------------------
  // Wiring

  /// Rows open what they show, as their first link does; a click on the link itself, or with
  /// a modifier (new tab), is left to the browser.
  function openRow(event) {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    if (event.target.closest('a, button, input, select, textarea')) return;
    if (window.getSelection && String(window.getSelection()).length > 0) return;
    const row = event.target.closest('tr[data-href]');
    if (row) location.hash = row.getAttribute('data-href');
  }

  function start() {
    $('signin-form').addEventListener('submit', signIn);
    $('signout').addEventListener('click', () => {
      sessionStorage.clear();
      // A fresh page: nothing that was shown (devices, users) stays behind in the DOM.
      location.replace(location.pathname);
    });
    $('app-picker').addEventListener('change', (event) => {
      location.hash = href('apps', event.target.value);
    });
    $('overview-refresh').addEventListener('click', () => render());
    $('notifications-status').addEventListener('change', (event) => {
      overview.status = event.target.value;
      loadNotifications(state.generation, false);
    });
    $('notifications-more').addEventListener('click', () => loadNotifications(state.generation, true));
    $('notification-cancel').addEventListener('click', cancelNotification);
    $('deliveries-outcome').addEventListener('change', (event) => {
      const { parts } = route();
      if (parts[3]) location.hash = hrefWithQuery(['apps', state.app, 'notifications', parts[3], 'deliveries'], { outcome: event.target.value });
    });
    $('device-search-form').addEventListener('submit', submitDeviceSearch);
    $('send-form').addEventListener('submit', submitSend);
    $('templates-refresh').addEventListener('click', () => render());
    $('template-preview-form').addEventListener('submit', submitPreview);
    $('user-search-form').addEventListener('submit', submitUserSearch);
    $('user-preferences').addEventListener('submit', submitPreferences);
    $('send-target-type').addEventListener('change', updateTargetLabel);
    document.addEventListener('click', openRow);
    window.addEventListener('hashchange', render);

    if (!apiKey()) {
      showSignIn();
      return;
    }
    // A reload in the same tab: the key is still in sessionStorage; check it and carry on.
    api(['apps']).then((answer) => {
      state.apps = Array.isArray(answer && answer.apps) ? answer.apps.filter((app) => app && typeof app.id === 'string') : [];
      if (state.apps.length === 0) signOut('This API key may not use any app of this gateway.');
      else enterConsole();
    }).catch((error) => {
      if (error.status !== 401) showSignIn(error.message);
    });
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
