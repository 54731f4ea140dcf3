// The Lesson's model map (app/views/parts/lesson_map.py draws it): the loaded model's blocks in their groups, the
// current stage's block marked (aria-current="step"), each block's array sizes on hover (its title). A click on a
// block that has a stage sends that stage as the one-shot "jump" trigger; nothing is sent on mount.
const el = (tag, className, parent) => {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (parent) parent.appendChild(node);
  return node;
};

// Text with **bold** runs, written as text nodes (the words come from the message files, never as HTML).
const withBold = (parent, text) => {
  String(text || '').split('**').forEach((part, i) => {
    if (!part) return;
    if (i % 2) el('strong', '', parent).textContent = part;
    else parent.appendChild(document.createTextNode(part));
  });
};

function render(host, data, jump) {
  const box = el('div', 'atlm');
  withBold(el('div', 'atlm-title', box), data.title);
  el('div', 'atlm-caption', box).textContent = data.facts;
  for (const group of data.groups) {
    const part = el('div', 'atlm-group' + (group.heading ? ' atlm-boxed' : ''), box);
    part.dataset.group = group.name;
    if (group.heading) el('div', 'atlm-caption', part).textContent = group.heading;
    for (const block of group.blocks) {
      const button = el('button', block.here ? 'atlm-here' : '', part);
      button.type = 'button';
      button.dataset.block = block.key;
      button.textContent = (block.here ? '▶ ' : '') + block.label;
      button.title = block.help;
      if (block.here) button.setAttribute('aria-current', 'step');
      if (block.stage === null) button.disabled = true;
      else button.addEventListener('click', () => jump(block.stage));
    }
  }
  host.replaceChildren(box);
}

export default function (component) {
  const {data, parentElement, setTriggerValue} = component;
  if (!data) return;
  let host = parentElement.querySelector(':scope > .atlm-host');
  if (!host) host = el('div', 'atlm-host', parentElement);
  host.jump = stage => host.send('jump', stage);
  host.send = setTriggerValue;  // the newest run's
  const signature = JSON.stringify(data);
  if (host.signature === signature) return;  // the same map: nothing to lay out again
  host.signature = signature;
  render(host, data, stage => host.jump(stage));
}
