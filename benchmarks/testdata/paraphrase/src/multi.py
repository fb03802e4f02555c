# Multi-intent queries over the MCP catalog: one per position of
# multi/drawn.jsonl, written by hand in draw order before any ranking was
# run on them. Each asks for every drawn tool, one ask per tool, in other
# words than the tools' own; a product name a user would say is kept.
Q = {
1: "Run the linter over /home/dev/web/src/app.ts and /home/dev/web/src/api.ts and tell me what it flags; separately, pull up everything about Airbnb stay 48213377 for 2 adults from March 3 to March 7.",
2: "In the Playwright browser, pick up the card with selector #task-42 and put it down on the #done column. Then, in the Puppeteer session, set the dropdown #country to 'Norway'.",
3: "Work through this with Perplexity step by step: is it cheaper to lease or buy a $38k car over 5 years at 6.5%? Also remove block 9f1c2e7a-33b0-4c1d-a1e2-7d0e8c1f0b55 from my Notion page.",
4: "Find Airbnb places in Lisbon for 4 adults from June 10 to June 15, and raise the file size limit on the Supabase project abcd1234 to 100 MB.",
5: "In Datadog, how many real-user sessions hit errors last 24 hours, broken down by browser? And in Pinecone, look across the 'support-tickets' and 'faq' indexes for 'refund after 30 days' and rerank the merged hits.",
6: "Who are all the people in our Slack workspace? Also leave a note on Linear ticket ENG-2231 saying the fix is deployed to staging.",
7: "Look up on the web with Brave what changed in the EU AI Act this month, then reason it through in numbered thoughts, revising as you go, whether our chatbot counts as high-risk.",
8: "What does Pinecone's documentation say about namespaces and metadata filters? And add a new item 'Pro plan, annual' with the description 'Yearly subscription, 2 seats' to our Stripe catalog.",
9: "When are ana@acme.io and raj@acme.io both not booked on Thursday between 9 and 17? And find coffee shops within 500 m of Alexanderplatz on Google Maps.",
10: "In Currents, show the debugging output of failed runs for the test with signature 7ab3f0 on branch main. Also stop the Replicate fine-tune job tr_8mXq2 that's running.",
11: "Show me the data model of InstantDB app 3f2c-app-9911. Then label Asana task 120456789 with the tag 1209981 ('blocked').",
12: "In Hostinger Reach, rename audience segment seg-77 of profile prof-12 to 'Lapsed buyers 2024' without changing who's in it. And open Sentry issue PROJ-4K1 from https://acme.sentry.io/issues/5512/ for me.",
13: "Which Microsoft 365 teams and distribution lists exist in our org? Also change my remark on folder fld-19 in Postman collection col-88 (comment 4410) to 'Please review the auth requests'.",
14: "Give me what SearXNG would autocomplete for 'best hiking boo'. Then make a new Notion page under page 2c8e91 titled 'Trip packing list'.",
15: "Get the full text of https://go.dev/blog/range-functions as markdown with Exa, and give me 5 sample links to the different kinds of resources the demo server has.",
16: "In the Puppeteer tab, run document.querySelectorAll('a').length and tell me the number. Then check MongoDB's official knowledge base on how to pick a shard key.",
17: "Using Brave, find bike repair shops near Kreuzberg, Berlin. And replace n8n workflow wf_204's whole definition with the nodes and connections I'm pasting below.",
18: "Pull the tables and text out of pages 2-4 of /docs/q3-report.pdf, then build a monday.com overview board with charts that sums up boards 5512 and 5513.",
19: "In the Playwright page, attach /tmp/avatar.png to the file picker #avatar-input. Also tell me the owner and size of the Apify storage 'jdoe~scraper-state'.",
20: "In the Chrome DevTools page 3, hold on until 'Payment confirmed' shows up. Then get me the first 50 items from Apify dataset ds_91kd of that actor run.",
21: "What are the file storage settings of Supabase project abcd1234? Also turn '221B Baker Street, London' into latitude and longitude with Mapbox.",
22: "Show the load timeline of the pages in Datadog real-user session sess-5521 for the 'checkout-web' app, and finish the Playwright recording session rec-17 so it writes out the test script.",
23: "Which colour codes can I give Google Calendar events and what does each mean? Also get the posts (no replies) in Teams channel 19:abc@thread.tacv2.",
24: "Run Replicate's official black-forest-labs/flux-schnell on 'a lighthouse at dawn, watercolor'. And print the current kubeconfig of my cluster, compact.",
25: "In Browser MCP, choose 'Express shipping' in the delivery menu (ref s12). Then list the latest Currents test runs for project prj_4410.",
26: "Add Maria Lopez (maria@lopez.dev) as a new Stripe client, and tell me which search engines and categories our SearXNG servers support.",
27: "Make the Apify actor apify/website-content-crawler available as a callable tool here, and ask Perplexity quickly: what's the population of Reykjavik?",
28: "Who changed the 'new-checkout' LaunchDarkly flag in production last week? And send a PATCH to https://api.acme.io/users/42 with {\"plan\":\"pro\"} from the Playwright browser.",
29: "Count the rows in the Postgres orders table where status = 'refunded'; set up a blank monday.com automation flow called 'Invoice approvals' in workspace 881; and look up on Exa the latest news about Postgres 18.",
30: "Go to the previous page in the Playwright browser, tell me how high above sea level Denver and La Paz are, and fetch the layout of Figma file Fk29aQ node 12:7.",
31: "Remove the Redis key session:8812. In LaunchDarkly, drop variation 'gpt4-long' of AI config 'support-bot' in project web. And rename monday.com folder 7781 to 'Archive 2024'.",
32: "Show me the 'Budget' tab of /home/ana/finance.xlsx, list which files PR #412 in acme/api touches, and in /home/ana/notes.md replace the line 'TODO: call bank' with 'DONE: called bank'.",
33: "Search Azure DevOps for work items mentioning 'login timeout' in project Portal, make the folder /srv/data/exports/2024/q4 with its parents, and show the comments on Asana task 1207733.",
34: "What role types can members of our Postman workspaces have? Add 'Acme Corp' and 'Jane Roe' as new nodes in my knowledge graph memory. And upload my edited permission rules for InstantDB app 3f2c-app-9911.",
35: "Which pods in namespace payments use the most CPU and memory? What's the Currents signature of the test 'logs in with SSO' in cypress/e2e/auth.cy.ts for project prj_4410? And plan a public transit trip in Beijing from 116.481,39.990 to 116.434,39.908 with Amap.",
36: "Create an Asana label 'urgent' in workspace 1100 coloured red; in InstantDB app 3f2c-app-9911 write a new 'todos' record {title: 'ship'}; and give me the git branch name for Shortcut story 3345.",
37: "Put the values [[\"Q1\",120],[\"Q2\",135]] into A1:B2 of sheet 'Sales' in /home/ana/report.xlsx, make Hostinger redeploy acme.io from branch main of acme/site automatically, and start a branch 'feature/export' off main in GitHub repo acme/api.",
38: "In Playwright, start listening for the response from /api/orders (call it orders-wait); in Puppeteer, open https://shop.example.com; and show me how loaded each Kubernetes node is.",
39: "Change LaunchDarkly AI config 'support-bot' variation 'short' to use temperature 0.2, move the Puppeteer mouse over #help-icon, and list our Azure DevOps projects.",
40: "Overwrite Jira issue ACME-77 in full with the body I give you, duplicate the 'Template' sheet of /home/ana/plan.xlsx as 'March', and rename LaunchDarkly AI config 'support-bot' to 'Helpdesk bot'.",
}

# "Playwright" names two servers of the catalog: where both have the tool
# asked for, either does the step (filled in from the catalog's tool lists,
# before any ranking was run).
EQUIV = {
    "playwright-executeautomation__playwright_drag": ["playwright__browser_drag"],
    "playwright-executeautomation__playwright_upload_file": ["playwright__browser_file_upload"],
    "playwright__browser_navigate_back": ["playwright-executeautomation__playwright_go_back"],
}
