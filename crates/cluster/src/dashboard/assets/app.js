// holdfast dashboard: refreshes the #live region of a page in place and
// shows an HA event's details when its band, dot or row is clicked.
// No framework, no build step; the same script serves the standalone
// timeline files (which have no #live region and do not refresh).
(function () {
  'use strict';

  var live = document.getElementById('live');
  var badge = document.getElementById('live-state');
  var panel = document.getElementById('details');
  var selected = null;

  function same(el) {
    return selected && el.getAttribute('data-at') === selected.at &&
      el.getAttribute('data-process') === selected.process;
  }

  function clear() {
    var marked = document.querySelectorAll('.selected');
    for (var i = 0; i < marked.length; i++) marked[i].classList.remove('selected');
  }

  function line(tag, text, cls) {
    var el = document.createElement(tag);
    el.textContent = text;
    if (cls) el.className = cls;
    panel.appendChild(el);
  }

  // Fills the panel from the events table's row of the selected event.
  function show() {
    if (!panel) return;
    clear();
    if (!selected) { panel.hidden = true; return; }
    // A report of several timelines: look only in the clicked one's.
    var scope = (selected.scope && document.contains(selected.scope)) ? selected.scope : document;
    var row = null;
    var rows = scope.querySelectorAll('tr.event');
    for (var i = 0; i < rows.length; i++) if (same(rows[i])) { row = rows[i]; break; }
    if (!row) { panel.hidden = true; return; }
    row.classList.add('selected');
    var drawn = scope.querySelectorAll('svg [data-at]');
    for (var j = 0; j < drawn.length; j++) if (same(drawn[j])) drawn[j].classList.add('selected');
    var cells = row.cells;
    panel.textContent = '';
    var close = document.createElement('button');
    close.type = 'button';
    close.className = 'close';
    close.textContent = '×';
    close.title = 'Close';
    panel.appendChild(close);
    line('h3', cells[2].textContent);
    line('p', cells[1].textContent + ' · ' + cells[0].textContent + ' UTC', 'muted');
    var details = cells[3].querySelectorAll('div');
    for (var k = 0; k < details.length; k++) line('p', details[k].textContent);
    var log = cells[4].textContent;
    if (log) {
      line('p', 'Log line to look for:', 'muted');
      line('code', log, 'log');
    }
    panel.hidden = false;
  }

  function pick(target) {
    if (target.closest('#details .close')) { selected = null; show(); return; }
    var el = target.closest('[data-at][data-process]');
    if (!el) return;
    selected = {
      at: el.getAttribute('data-at'),
      process: el.getAttribute('data-process'),
      scope: el.closest('section.timeline-section')
    };
    show();
  }

  document.addEventListener('click', function (e) { pick(e.target); });
  document.addEventListener('keydown', function (e) {
    if (e.key === 'Enter' || e.key === ' ') pick(e.target);
    if (e.key === 'Escape') { selected = null; show(); }
  });

  if (!live) return;
  var every = parseInt(live.getAttribute('data-refresh-ms'), 10) || 2000;
  var refreshes = 0;

  function state(text, ok) {
    if (!badge) return;
    badge.textContent = text;
    badge.className = ok ? 'ok' : 'bad';
  }

  function refresh() {
    // Not while the pointer rests on a picture: its tooltip would vanish.
    if (live.querySelector('.timeline-picture:hover, svg.graph:hover')) {
      setTimeout(refresh, every);
      return;
    }
    fetch(location.pathname + location.search, {
      headers: { 'X-Holdfast-Partial': '1' },
      cache: 'no-store',
      redirect: 'manual'
    }).then(function (response) {
      var elsewhere = response.headers.get('X-Holdfast-Navigate');
      if (elsewhere) { location.href = elsewhere; return null; }
      if (response.type === 'opaqueredirect') { location.reload(); return null; }
      return response.text();
    }).then(function (html) {
      if (html === null) return;
      live.innerHTML = html;
      refreshes += 1;
      live.setAttribute('data-refreshes', String(refreshes));
      show();
      state('live', true);
      setTimeout(refresh, every);
    }).catch(function () {
      state('JobManager not reachable, retrying', false);
      setTimeout(refresh, every);
    });
  }

  setTimeout(refresh, every);
})();
